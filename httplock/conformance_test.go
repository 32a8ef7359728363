package httplock_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on net/http's ServeMux and on chi.
func TestConformance(t *testing.T) {
	t.Run("ServeMux", func(t *testing.T) { conformance.Run(t, builders.Stdlib) })
	t.Run("chi", func(t *testing.T) { conformance.Run(t, builders.Chi) })
}

// Any valid percent-encoding of an id gives the key of the id, decoded once.
func FuzzCanonicalKey(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Stdlib) }

// The same on chi, which hands its path values over still escaped.
func FuzzCanonicalKeyChi(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Chi) }

// A hostile client's distinct methods, paths and keys leave no trace.
func TestFlood(t *testing.T) {
	t.Run("ServeMux", func(t *testing.T) {
		conformance.Flood(t, builders.Stdlib, nil)
	})
	t.Run("chi", func(t *testing.T) {
		conformance.Flood(t, builders.Chi, nil)
	})
}
