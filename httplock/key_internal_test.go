package httplock

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The path value is the router's own (r.PathValue) when the pattern has
// the wildcard, for ServeMux and chi patterns alike, and reading it
// allocates nothing (it runs on every request).
func TestPathValueFromPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, name, value, want string
		ok                         bool
	}{
		{"POST /orders/{id}/pay", "id", "a%2Fb", "a%2Fb", true},
		{"example.com/orders/{id}", "id", "42", "42", true},
		{"/orders/{id:[0-9]+}/pay", "id", "42", "42", true},
		{"/orders/{id}-{v}", "v", "x", "x", true},
		{"GET /files/{rest...}", "rest", "a/b c", "a/b c", true},
		{"/static/*", "*", "a/b", "a/b", true},
		{"/orders/{id}/pay", "other", "x", "", false},
		{"", "id", "42", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Pattern = tc.pattern
		r.SetPathValue(tc.name, tc.value)
		v, ok := pathValue(r, tc.name)
		if v != tc.want || ok != tc.ok {
			t.Errorf("%q %q: %q %v, want %q %v", tc.pattern, tc.name, v, ok, tc.want, tc.ok)
		}
	}
	r := httptest.NewRequest("POST", "/tenants/acme/orders/42/pay", nil)
	r.Pattern = "POST /tenants/{tenant}/orders/{id}/pay"
	r.SetPathValue("id", "42")
	if n := testing.AllocsPerRun(100, func() { _, _ = pathValue(r, "id") }); n != 0 {
		t.Errorf("pathValue allocates %v times per call", n)
	}
}

// KeyFromRoute keys by the pattern's path and its wildcards, whatever the
// pattern's method, host or wildcard syntax.
func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		names         []string
	}{
		{"POST /orders/{id}/pay", "/orders/{id}/pay", []string{"id"}},
		{"example.com/orders/{id}/lines/{line}", "/orders/{id}/lines/{line}", []string{"id", "line"}},
		{"/orders/{id:[0-9]+}-{v}", "/orders/{id:[0-9]+}-{v}", []string{"id", "v"}},
		{"GET /files/{rest...}", "/files/{rest...}", []string{"rest"}},
		{"/static/*", "/static/*", []string{"*"}},
		{"/jobs/nightly", "/jobs/nightly", nil},
		{"", "", nil},
	} {
		path, names := route(tc.pattern)
		if path != tc.path || strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Errorf("route(%q) = %q %q, want %q %q", tc.pattern, path, names, tc.path, tc.names)
		}
	}
}
