package echo5lock_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on echo v5.
func TestConformance(t *testing.T) { conformance.Run(t, builders.Echo5) }

// Any valid percent-encoding of an id gives the key of the id, decoded to its end.
func FuzzCanonicalKey(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Echo5) }

// A hostile client's distinct methods, paths and keys leave no trace.
func TestFlood(t *testing.T) {
	conformance.Flood(t, builders.Echo5, nil)
}

// The idempotency options are accepted or refused as in every other HTTP
// adapter (conformance.IdempotencyCases).
func TestIdempotencyOptionCases(t *testing.T) {
	conformance.RunIdempotencyOptionCases(t, builders.Echo5, "echo5lock: Idempotent: ")
}
