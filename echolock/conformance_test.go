package echolock_test

import (
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on echo v4.
func TestConformance(t *testing.T) { conformance.Run(t, builders.Echo) }

// Any valid percent-encoding of an id gives the key of the id, decoded to its end.
func FuzzCanonicalKey(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Echo) }

// A hostile client's distinct methods, paths and keys leave no trace: the
// route table holds route templates only.
func TestFlood(t *testing.T) {
	toMiddleware, templates := echolock.Tracked()
	conformance.Flood(t, builders.EchoWith(toMiddleware), func(*core.Client) map[string]int {
		return map[string]int{"route templates": templates()}
	})
}

// The idempotency options are accepted or refused as in every other HTTP
// adapter (conformance.IdempotencyCases).
func TestIdempotencyOptionCases(t *testing.T) {
	conformance.RunIdempotencyOptionCases(t, builders.Echo, "echolock: Idempotent: ")
}
