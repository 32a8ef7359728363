package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// answerHeaders are the headers an answer may carry besides the ones the
// transport adds (Date, Content-Length).
func answerHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if k != "Date" && k != "Content-Length" {
			out[k] = v
		}
	}
	return out
}

// IdenticalAnswers: every outcome that stops a request is answered with the
// same status, the same headers (Content-Type application/problem+json,
// X-Content-Type-Options nosniff, Retry-After where retrying can work, and
// nothing else) and the same problem document, on replica A and replica B
// whatever their frameworks: contended (409), limited (429), the request's
// deadline (503), a bad key (400), a misconfigured route (500) and Redis
// down (503).
func IdenticalAnswers(t *testing.T, a, b Adapter) { identicalAnswers(t, a, b, false) }

// NilResponders: routes whose On* responders were each given a custom
// answer and then nil (Route.NilResponders) answer every outcome of
// IdenticalAnswers by default, without a panic: in every adapter a nil
// responder means the default answer.
func NilResponders(t *testing.T, a, b Adapter) { identicalAnswers(t, a, b, true) }

func identicalAnswers(t *testing.T, a, b Adapter, nilResponders bool) {
	writeOKH := func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { writeOK(w) }
	routes := []Route{
		{Method: http.MethodPost, Path: "/a/:id/contended", Key: orderKey, NoWait: true, Handler: writeOKH},
		{Method: http.MethodPost, Path: "/a/:id/limited", Key: "const:lim,param:id", Limit: 1, NoWait: true, Handler: writeOKH},
		{Method: http.MethodPost, Path: "/a/:id/deadline", Key: orderKey, Deadline: 200 * time.Millisecond, Handler: writeOKH},
		{Method: http.MethodPost, Path: "/a/bad", Key: "const:t,header:X-Tenant", Handler: writeOKH},
		{Method: http.MethodPost, Path: "/a/:id/misconfigured", Key: "const:m,param:nope", Handler: writeOKH},
	}
	for i := range routes {
		routes[i].NilResponders = nilResponders
	}
	e := newEnv(t, a, b, ttl, routes...)
	ctx := e.ctx(60 * time.Second)
	held, err := e.reps[1].client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(context.Background()) }()
	permit, err := e.reps[1].client.Semaphore("lim:1", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = permit.Release(context.Background()) }()
	cases := []struct {
		name, path string
		status     int
		retry      bool
	}{
		{"contended", "/a/1/contended", http.StatusConflict, true},
		{"limited", "/a/1/limited", http.StatusTooManyRequests, true},
		{"deadline", "/a/1/deadline", http.StatusServiceUnavailable, true},
		{"bad key", "/a/bad", http.StatusBadRequest, false},
		{"misconfigured", "/a/1/misconfigured", http.StatusInternalServerError, false},
		{"redis down", "/a/2/contended", http.StatusServiceUnavailable, true},
	}
	for _, tc := range cases {
		if tc.name == "redis down" {
			e.srv.Kill()
		}
		var docs [2]guard.Problem
		for i, rep := range e.reps {
			r := e.do(ctx, i, http.MethodPost, tc.path)
			want := http.Header{"Content-Type": {guard.ProblemContentType}, "X-Content-Type-Options": {"nosniff"}}
			if tc.retry {
				want.Set(guard.HeaderRetryAfter, "1")
			}
			if got := answerHeaders(r.header); r.status != tc.status || !sameHeader(got, want) {
				t.Errorf("%s on %s: %d %v, want %d %v", tc.name, rep.adapter.Name, r.status, got, tc.status, want)
			}
			if err := json.Unmarshal([]byte(r.body), &docs[i]); err != nil || docs[i].Status != tc.status || docs[i].Title == "" || docs[i].Type == "" {
				t.Errorf("%s on %s: problem %q (%v)", tc.name, rep.adapter.Name, r.body, err)
			}
		}
		if docs[0] != docs[1] {
			t.Errorf("%s: %s answered %+v, %s %+v", tc.name, a.Name, docs[0], b.Name, docs[1])
		}
	}
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// RouteKey: KeyFromRoute keys a request by its route and its path
// parameters: the same route and id share a key, another route or id does
// not, and the id is the key's last part.
func RouteKey(t *testing.T, a, b Adapter) {
	h := func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		ok2(w, l.Key())
	}
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/orders/:id/pay", KeyFromRoute: true, Handler: h},
		Route{Method: http.MethodPost, Path: "/orders/:id/refund", KeyFromRoute: true, Handler: h},
	)
	ctx := e.ctx(30 * time.Second)
	key := func(i int, path string) string {
		r := e.do(ctx, i, http.MethodPost, path)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %q %v", path, r.status, r.body, r.err)
		}
		return r.body
	}
	pay, pay2, refund, other := key(0, "/orders/42/pay"), key(1, "/orders/42/pay"), key(0, "/orders/42/refund"), key(0, "/orders/43/pay")
	if pay != pay2 || pay == refund || pay == other || !strings.HasSuffix(pay, ":42") {
		t.Errorf("route keys: pay 42 %q and %q, refund 42 %q, pay 43 %q", pay, pay2, refund, other)
	}
}
