package guard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

func tenantScoped(t *testing.T) *guard.Idempotency[req] {
	t.Helper()
	x, err := guard.NewIdempotency(mapReader{}, guard.IdempotencyScope(guard.Header[req](mapReader{}, "X-Tenant"), guard.Cookie[req](mapReader{}, "user")))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Each of method, route, scope and key makes another record; none of them
// is stored in the clear; the record is one hash tag.
func TestRecordKey(t *testing.T) {
	x := tenantScoped(t)
	type in struct {
		tenant, user, method, route, key string
	}
	base := in{"acme", "ann", "POST", "/orders/:id/pay", "k1"}
	cases := map[string]in{
		"base":                  base,
		"tenant":                {"acme2", "ann", "POST", "/orders/:id/pay", "k1"},
		"principal":             {"acme", "bob", "POST", "/orders/:id/pay", "k1"},
		"method":                {"acme", "ann", "PATCH", "/orders/:id/pay", "k1"},
		"route":                 {"acme", "ann", "POST", "/orders/:id/refund", "k1"},
		"key":                   {"acme", "ann", "POST", "/orders/:id/pay", "k2"},
		"shifted: tenant|user":  {"acme:ann", "x", "POST", "/orders/:id/pay", "k1"},
		"shifted: tenant/user":  {"acm", "eann", "POST", "/orders/:id/pay", "k1"},
		"shifted: route/key":    {"acme", "ann", "POST", "/orders/:id/payk", "1"},
		"shifted: method/route": {"acme", "ann", "POS", "T/orders/:id/pay", "k1"},
	}
	seen := map[string]string{}
	for name, c := range cases {
		k, err := x.RecordKey(req{"header:X-Tenant": c.tenant, "cookie:user": c.user}, c.method, c.route, c.key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(k) != 45 || k[0] != '{' || k[44] != '}' || strings.ContainsAny(k[1:44], "{}") {
			t.Errorf("%s: %q is not one hash tag of a SHA-256", name, k)
		}
		for _, v := range []string{c.tenant, c.user, c.key, c.route} {
			if len(v) > 2 && strings.Contains(k, v) {
				t.Errorf("%s: %q holds %q in the clear", name, k, v)
			}
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share the record %q", name, other, k)
		}
		seen[k] = name
	}
	again, _ := x.RecordKey(req{"header:X-Tenant": "acme", "cookie:user": "ann"}, "POST", "/orders/:id/pay", "k1")
	if seen[again] != "base" {
		t.Errorf("the same request gave another record: %q", again)
	}
}

// A scope part is read and checked as a lock key's part is: missing or
// with a control character, the request is refused (400), never scoped to
// nothing.
func TestRecordKeyScopeRefused(t *testing.T) {
	x := tenantScoped(t)
	for _, tc := range []struct {
		name string
		r    req
		want error
	}{
		{"missing tenant", req{"cookie:user": "ann"}, nil},
		{"control char", req{"header:X-Tenant": "ac\x00me", "cookie:user": "ann"}, guard.ErrControlChar},
		{"control char in cookie", req{"header:X-Tenant": "acme", "cookie:user": "a%0Ann"}, guard.ErrControlChar},
	} {
		_, err := x.RecordKey(tc.r, "POST", "/pay", "k1")
		var kpe *core.KeyPartError
		if !errors.Is(err, core.ErrInvalidKey) || !errors.As(err, &kpe) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want a *core.KeyPartError (400)", tc.name, err)
		}
		if core.Classify(nil, err) != core.OutcomeBadKey {
			t.Errorf("%s: %v is not a bad key", tc.name, err)
		}
	}
	// The same values in a lock key are refused with the same error.
	_, lockErr := guard.Join(guard.Header[req](mapReader{}, "X-Tenant")).Build(req{"header:X-Tenant": "ac\x00me"})
	_, recErr := x.RecordKey(req{"header:X-Tenant": "ac\x00me", "cookie:user": "ann"}, "POST", "/pay", "k1")
	if lockErr == nil || recErr == nil || lockErr.Error() != recErr.Error() {
		t.Errorf("a lock key says %v, a record key %v", lockErr, recErr)
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(method, route, query, ct, body string) string {
		return guard.Fingerprint(method, route, query, ct, []byte(body))
	}
	base := fp("POST", "/pay", "a=1&b=2", "application/json", `{"amount":10}`)
	for _, tc := range []struct {
		name string
		fp   string
		same bool
	}{
		{"the same request", fp("POST", "/pay", "a=1&b=2", "application/json", `{"amount":10}`), true},
		{"query in another order", fp("POST", "/pay", "b=2&a=1", "application/json", `{"amount":10}`), true},
		{"query spelled otherwise", fp("POST", "/pay", "%61=1&b=%32", "application/json", `{"amount":10}`), true},
		{"a pair net/http skips", fp("POST", "/pay", "a=1&b=2&c;d=3", "application/json", `{"amount":10}`), true},
		{"another body", fp("POST", "/pay", "a=1&b=2", "application/json", `{"amount":11}`), false},
		{"another query value", fp("POST", "/pay", "a=1&b=3", "application/json", `{"amount":10}`), false},
		{"a repeated name's values swapped", fp("POST", "/pay", "a=1&a=2&b=2", "application/json", `{"amount":10}`), false},
		{"another Content-Type", fp("POST", "/pay", "a=1&b=2", "application/x-www-form-urlencoded", `{"amount":10}`), false},
		{"another method", fp("PATCH", "/pay", "a=1&b=2", "application/json", `{"amount":10}`), false},
		{"another route", fp("POST", "/refund", "a=1&b=2", "application/json", `{"amount":10}`), false},
		{"Content-Type into body", fp("POST", "/pay", "a=1&b=2", "application/jso", `n{"amount":10}`), false},
		{"query into route", fp("POST", "/pay?a=1", "b=2", "application/json", `{"amount":10}`), false},
	} {
		if (tc.fp == base) != tc.same {
			t.Errorf("%s: equal %v, want %v", tc.name, tc.fp == base, tc.same)
		}
	}
	if a, b := fp("POST", "/pay", "a=1&a=2", "", ""), fp("POST", "/pay", "a=2&a=1", "", ""); a == b {
		t.Error("a=1&a=2 and a=2&a=1 share a fingerprint, but a handler reading a sees 1 or 2")
	}
	x, _ := guard.NewIdempotency[req](mapReader{})
	r := req{"query:a": "1", "header:Content-Type": "application/json"}
	if got, want := x.Fingerprint(r, "POST", "/pay", []byte("{}")), fp("POST", "/pay", "a=1", "application/json", "{}"); got != want {
		t.Errorf("Idempotency.Fingerprint %q, Fingerprint %q", got, want)
	}
}

// One key on /orders/a/pay and /orders/b/pay is two requests: the path's
// values are in the fingerprint, read as a Param part reads them, so every
// spelling of one id is one request.
func TestFingerprintPathValues(t *testing.T) {
	x, _ := guard.NewIdempotency[req](mapReader{})
	fp := func(id, item string) string {
		return x.Fingerprint(req{"param:id": id, "param:item": item, "params": "id,item"}, "POST", "/orders/:id/items/:item", []byte("{}"))
	}
	base := fp("a", "1")
	for _, tc := range []struct {
		name string
		fp   string
		same bool
	}{
		{"another order", fp("b", "1"), false},
		{"another item", fp("a", "2"), false},
		{"values swapped between parameters", fp("1", "a"), false},
		{"the order escaped", fp("%61", "1"), true},
		{"the order escaped twice", fp("%2561", "1"), true},
		{"a value moved into the next", fp("a/", "1"), false},
	} {
		if (tc.fp == base) != tc.same {
			t.Errorf("%s: equal %v, want %v", tc.name, tc.fp == base, tc.same)
		}
	}
	if got, want := base, guard.Fingerprint("POST", "/orders/:id/items/:item", "", "", []byte("{}"), "a", "1"); got != want {
		t.Errorf("Idempotency.Fingerprint %q, Fingerprint %q", got, want)
	}
}

// Every router's spelling of one route is one template, so a retry that
// reaches another framework finds the record.
func TestRouteTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"/orders/:id/pay":         "/orders/:id/pay",
		"/orders/{id}/pay":        "/orders/:id/pay",
		"/orders/{id:[0-9]+}/pay": "/orders/:id/pay",
		"/files/{rest...}":        "/files/*",
		"/files/*path":            "/files/*",
		"/files/*":                "/files/*",
		"/files/+":                "/files/*",
		"/orders/{$}":             "/orders/",
		"/a/{x}-{y}":              "/a/{x}-{y}",
		"/plain":                  "/plain",
	} {
		if got := guard.RouteTemplate(in); got != want {
			t.Errorf("RouteTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}
