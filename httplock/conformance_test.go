package httplock_test

import (
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on net/http's ServeMux and on chi.
func TestConformance(t *testing.T) {
	t.Run("ServeMux", func(t *testing.T) { conformance.Run(t, builders.Stdlib) })
	t.Run("chi", func(t *testing.T) { conformance.Run(t, builders.Chi) })
}

// Any valid percent-encoding of an id gives the key of the id, decoded to its end.
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

// Under chi's path middleware, which rewrites the path chi routes on and
// not the request's URL, the key is the id the handler reads, and the same
// id's plain path on another replica (ServeMux, gin) is refused meanwhile.
func TestChiPathMiddleware(t *testing.T) {
	for _, tc := range []struct {
		mw        func(http.Handler) http.Handler
		name      string
		spellings []string
	}{
		{middleware.CleanPath, "CleanPath", []string{"//orders/42", "/orders/./42", "/orders//42", "/x/../orders/42", "//orders/%34%32"}},
		{middleware.URLFormat, "URLFormat", []string{"/orders/42.json", "/orders/%34%32.xml", "/orders/%2525.json"}},
		{middleware.StripSlashes, "StripSlashes", []string{"/orders/42/", "/orders/%34%32/", "/orders/%2525/"}},
	} {
		a := builders.ChiWith("chi+"+tc.name, tc.mw)
		t.Run(tc.name, func(t *testing.T) { conformance.PathRewrites(t, a, a, tc.spellings...) })
		t.Run(tc.name+"+net/http", func(t *testing.T) { conformance.PathRewrites(t, a, builders.Stdlib, tc.spellings...) })
		t.Run(tc.name+"+gin", func(t *testing.T) { conformance.PathRewrites(t, a, builders.Gin, tc.spellings...) })
	}
}

// The idempotency options are accepted or refused as in every other HTTP
// adapter (conformance.IdempotencyCases).
func TestIdempotencyOptionCases(t *testing.T) {
	conformance.RunIdempotencyOptionCases(t, builders.Stdlib, "httplock: Idempotent: ")
}
