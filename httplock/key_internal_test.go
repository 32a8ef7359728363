package httplock

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The path value is read from the escaped path at the wildcard's place,
// for ServeMux and chi patterns alike, and reading it allocates nothing
// (it runs on every request).
func TestPathValueFromPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, target, name, want string
		escaped, ok                 bool
	}{
		{"POST /orders/{id}/pay", "/orders/a%2Fb/pay", "id", "a%2Fb", true, true},
		{"example.com/orders/{id}", "/orders/42", "id", "42", true, true},
		{"/orders/{id:[0-9]+}/pay", "/orders/42/pay", "id", "42", true, true},
		{"GET /files/{rest...}", "/files/a/b%20c", "rest", "a/b%20c", true, true},
		{"/orders/{id}/pay", "/orders/42/pay", "other", "", false, false},
		{"", "/orders/42", "id", "", false, false},
	} {
		r := httptest.NewRequest("GET", tc.target, nil)
		r.Pattern = tc.pattern
		v, escaped, ok := pathValue(r, tc.name)
		if v != tc.want || escaped != tc.escaped || ok != tc.ok {
			t.Errorf("%q %q %q: %q %v %v, want %q %v %v", tc.pattern, tc.target, tc.name, v, escaped, ok, tc.want, tc.escaped, tc.ok)
		}
	}
	r := httptest.NewRequest("POST", "/tenants/acme/orders/42/pay", nil)
	r.Pattern = "POST /tenants/{tenant}/orders/{id}/pay"
	if n := testing.AllocsPerRun(100, func() { _, _, _ = pathValue(r, "id") }); n != 0 {
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
