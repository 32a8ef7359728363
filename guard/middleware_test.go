package guard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// testLogger counts what a Middleware tells the framework's logger.
type testLogger struct{ misconfigured, releaseFailed []error }

func (l *testLogger) Misconfigured(_ req, _ string, err error) {
	l.misconfigured = append(l.misconfigured, err)
}
func (l *testLogger) ReleaseFailed(_ req, err error) { l.releaseFailed = append(l.releaseFailed, err) }

func newMiddleware(t *testing.T, c guard.MiddlewareConfig[req]) (*guard.Middleware[req], *testLogger) {
	t.Helper()
	if c.Client == nil {
		c.Client = &core.Client{} // never used: no test here reaches Redis
	}
	log := &testLogger{}
	m, err := guard.NewMiddleware(c, mapReader{}, log)
	if err != nil {
		t.Fatal(err)
	}
	return m, log
}

// DenyHandler answers Contended and Limited, ErrorHandler every other
// refusal but Lost, which keeps the default answer; without them every
// outcome is answered by default, its headers set only when there is a
// problem document to send.
func TestMiddlewareRefuse(t *testing.T) {
	var got string
	deny := func(_ req, key string, _ error) error { got = "deny " + key; return errors.New("denied") }
	fail := func(req, error) error { got = "error"; return errors.New("failed") }
	custom, _ := newMiddleware(t, guard.MiddlewareConfig[req]{KeyParts: "const:k", DenyHandler: deny, ErrorHandler: fail})
	plain, _ := newMiddleware(t, guard.MiddlewareConfig[req]{KeyParts: "const:k"})
	for _, tc := range []struct {
		o    core.Outcome
		want string
	}{
		{core.OutcomeContended, "deny k"}, {core.OutcomeTimeout, "deny k"}, {core.OutcomeLimited, "deny k"},
		{core.OutcomeUnavailable, "error"}, {core.OutcomeDeadline, "error"}, {core.OutcomeClosed, "error"},
		{core.OutcomeBadKey, "error"}, {core.OutcomeMisconfigured, "error"}, {core.OutcomeCanceled, "error"},
		{core.OutcomeLost, ""},
	} {
		got = ""
		hdr := http.Header{}
		a, isCustom, err := custom.Refuse(nil, &guard.Hold{Outcome: tc.o, Err: errors.New("cause"), Key: "k"}, hdr)
		if got != tc.want || isCustom != (tc.want != "") || (err != nil) != isCustom {
			t.Errorf("%v: handler %q (custom %v, err %v), want %q", tc.o, got, isCustom, err, tc.want)
		}
		if isCustom && hdr.Get("Content-Type") != "" {
			t.Errorf("%v: a custom answer got the default's headers: %v", tc.o, hdr)
		}
		if !isCustom && a.Status != guard.Status(tc.o) {
			t.Errorf("%v: default answer %d, want %d", tc.o, a.Status, guard.Status(tc.o))
		}

		hdr = http.Header{}
		a, isCustom, err = plain.Refuse(nil, &guard.Hold{Outcome: tc.o, Err: errors.New("cause"), Key: "k"}, hdr)
		if isCustom || err != nil || a.Status != guard.Status(tc.o) {
			t.Errorf("%v without handlers: %d custom %v err %v", tc.o, a.Status, isCustom, err)
		}
		if wantHdr := tc.o != core.OutcomeCanceled; (hdr.Get("Content-Type") == guard.ProblemContentType) != wantHdr || (a.Problem != nil) != wantHdr {
			t.Errorf("%v without handlers: problem %v, headers %v", tc.o, a.Problem, hdr)
		}
	}
}

// The Skipper is asked only of a request that matched a route; a CORS
// preflight (headers any client can send) is locked like any request.
func TestMiddlewareSkip(t *testing.T) {
	asked := 0
	m, _ := newMiddleware(t, guard.MiddlewareConfig[req]{KeyParts: "const:k",
		Skipper: func(r req) bool { asked++; return r["header:X-Skip"] != "" }})
	preflight := req{"method": http.MethodOptions, "header:Origin": "https://app.example", "header:Access-Control-Request-Method": "POST"}
	for _, tc := range []struct {
		name   string
		r      req
		routed bool
		skip   bool
		asked  int
	}{
		{"unrouted", req{}, false, true, 0},
		{"preflight", preflight, true, false, 1},
		{"skipped", req{"header:X-Skip": "1"}, true, true, 1},
		{"locked", req{}, true, false, 1},
	} {
		asked = 0
		if got := m.Skip(tc.r, tc.routed); got != tc.skip || asked != tc.asked {
			t.Errorf("%s: Skip %v (Skipper asked %d times), want %v (%d)", tc.name, got, asked, tc.skip, tc.asked)
		}
	}
}

// A failed release goes to the ReleaseErrorHandler, else to the framework's
// logger; a misconfigured route to the logger.
func TestMiddlewareTells(t *testing.T) {
	var handled []error
	withHandler, log1 := newMiddleware(t, guard.MiddlewareConfig[req]{KeyParts: "const:k,param:id",
		ReleaseErrorHandler: func(_ req, err error) { handled = append(handled, err) }})
	byDefault, log2 := newMiddleware(t, guard.MiddlewareConfig[req]{KeyParts: "const:k"})
	withHandler.Released(nil, core.ErrLost)
	byDefault.Released(nil, core.ErrLost)
	if len(handled) != 1 || len(log1.releaseFailed) != 0 || len(log2.releaseFailed) != 1 {
		t.Errorf("release errors: %d handled, %d and %d logged; want 1, 0, 1", len(handled), len(log1.releaseFailed), len(log2.releaseFailed))
	}
	if h := withHandler.Acquire(context.Background(), req{}, "/orders", http.MethodPost); h.Outcome != core.OutcomeMisconfigured ||
		len(log1.misconfigured) != 1 || !errors.Is(log1.misconfigured[0], guard.ErrNoRouteParam) {
		t.Errorf("a route without :id: %v, logged %v", h.Outcome, log1.misconfigured)
	}
}

// The key and side fields are read as ParseKeys and ParseSide read them,
// the rest checked by New.
func TestNewMiddlewareRefuses(t *testing.T) {
	kf := func(req) (string, error) { return "k", nil }
	for _, tc := range []struct {
		name string
		c    guard.MiddlewareConfig[req]
		msg  string
	}{
		{"no client", guard.MiddlewareConfig[req]{KeyParts: "const:k"}, "no *core.Client"},
		{"no key", guard.MiddlewareConfig[req]{Client: &core.Client{}}, "no key source"},
		{"two key sources", guard.MiddlewareConfig[req]{Client: &core.Client{}, KeyParts: "const:k", KeyFunc: kf}, "choose one"},
		{"bad side", guard.MiddlewareConfig[req]{Client: &core.Client{}, KeyParts: "const:k", ReadWrite: "both"}, "ReadWrite"},
		{"side and limit", guard.MiddlewareConfig[req]{Client: &core.Client{}, KeyParts: "const:k", ReadWrite: "method", Limit: 2}, "alternatives"},
		{"wait in options", guard.MiddlewareConfig[req]{Client: &core.Client{}, KeyParts: "const:k", AcquireOptions: []core.AcquireOption{core.Wait(1)}}, "core.Wait"},
	} {
		if _, err := guard.NewMiddleware(tc.c, mapReader{}, &testLogger{}); !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrInvalidOption mentioning %q", tc.name, err, tc.msg)
		}
	}
}

// Must panics with the adapter's name before the error.
func TestMust(t *testing.T) {
	if got := guard.Must("x", func() (int, error) { return 1, nil }); got != 1 {
		t.Errorf("Must = %d", got)
	}
	defer func() {
		if r, _ := recover().(string); r != "x: bad" {
			t.Errorf("panic %q, want \"x: bad\"", r)
		}
	}()
	guard.Must("x", func() (int, error) { return 0, errors.New("bad") })
}
