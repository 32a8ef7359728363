package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The idempotency scenarios: a route with the adapter's Idempotent in
// front of its handler (and of its lock, when it has one). The handler is
// a payment: it counts its runs (the witness), and answers 201 with a body
// naming its run, so that a replay is told from a second run byte for
// byte, with headers the replay keeps (Content-Type, Location) and ones it
// never carries (Set-Cookie, X-Run).

// payment is the idempotency scenarios' handler and its witness.
type payment struct {
	runs atomic.Int32
	// status answers run n (from 1); nil: 201.
	status func(n int32) int
	// hold, when set, is where run n waits (its first run entered, then
	// released by the test).
	entered, release *signal
	mu               sync.Mutex
	claims           []int64 // the fencing token of each run's claim
	leases           int     // runs that also held the route's lock
}

func (p *payment) handle(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
	n := p.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	claim, claimed := core.ClaimFromContext(r.Context())
	p.mu.Lock()
	if claimed {
		p.claims = append(p.claims, claim.Token())
	}
	if ok && claim != l {
		p.leases++
	}
	p.mu.Unlock()
	if p.entered != nil {
		p.entered.fire()
		select {
		case <-p.release.ch:
		case <-time.After(30 * time.Second):
		}
	}
	status := http.StatusCreated
	if p.status != nil {
		status = p.status(n)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/payments/%d", n))
	w.Header().Set("Set-Cookie", fmt.Sprintf("session=run%d", n))
	w.Header().Set("X-Run", fmt.Sprint(n))
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"run":%d,"claimed":%t,"body":%q}`, n, claimed, body)
}

// post sends a POST with body to replica i; hdr are header name/value
// pairs, each added as its own line.
func (e *env) post(ctx context.Context, i int, path, body string, hdr ...string) response {
	return e.send(ctx, i, http.MethodPost, path, body, hdr...)
}

func (e *env) send(ctx context.Context, i int, method, path, body string, hdr ...string) response {
	req, err := http.NewRequestWithContext(ctx, method, e.reps[i].url+path, strings.NewReader(body))
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for j := 0; j+1 < len(hdr); j += 2 {
		req.Header.Add(hdr[j], hdr[j+1])
	}
	res, err := e.http.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: string(b), err: err}
}

// wantReplay checks that r is a replay of first: the same status and body
// byte for byte, the allow-listed headers, Idempotent-Replayed: true, and
// never Set-Cookie or a header outside the allow-list.
func wantReplay(t *testing.T, what string, r, first response) {
	t.Helper()
	switch {
	case r.err != nil || r.status != first.status || r.body != first.body:
		t.Errorf("%s: %d %q %v, want the replay of %d %q", what, r.status, r.body, r.err, first.status, first.body)
	case r.header.Get(guard.HeaderIdempotentReplayed) != "true":
		t.Errorf("%s: no %s: true (headers %v)", what, guard.HeaderIdempotentReplayed, r.header)
	case r.header.Get("Location") != first.header.Get("Location") || r.header.Get("Content-Type") != first.header.Get("Content-Type"):
		t.Errorf("%s: Location %q Content-Type %q, want %q %q", what, r.header.Get("Location"), r.header.Get("Content-Type"),
			first.header.Get("Location"), first.header.Get("Content-Type"))
	case r.header.Get("Set-Cookie") != "" || r.header.Get("X-Run") != "":
		t.Errorf("%s: replayed Set-Cookie %q, X-Run %q", what, r.header.Values("Set-Cookie"), r.header.Get("X-Run"))
	}
}

// wantRun checks that r is the answer of run n, not a replay.
func wantRun(t *testing.T, what string, r response, status int, n int32) {
	t.Helper()
	if r.err != nil || r.status != status || !strings.Contains(r.body, fmt.Sprintf(`"run":%d,`, n)) || r.header.Get(guard.HeaderIdempotentReplayed) != "" {
		t.Errorf("%s: %d %q %v (replayed %q), want run %d answered %d", what, r.status, r.body, r.err, r.header.Get(guard.HeaderIdempotentReplayed), n, status)
	}
}

// wantRefused checks that r is the middleware's own answer status, a
// problem, with Retry-After where it applies.
func wantRefused(t *testing.T, what string, r response, status int) {
	t.Helper()
	if r.err != nil || r.status != status {
		t.Errorf("%s: %d %q %v, want %d", what, r.status, r.body, r.err, status)
		return
	}
	checkProblem(t, r, status, "")
	retry := status == http.StatusConflict || status == http.StatusServiceUnavailable
	if got := r.header.Get("Retry-After") != ""; got != retry {
		t.Errorf("%s: Retry-After %q", what, r.header.Get("Retry-After"))
	}
	if r.header.Get(guard.HeaderIdempotentReplayed) != "" {
		t.Errorf("%s: a refusal marked replayed", what)
	}
}

const payPath = "/pay/:id"

// IdempotentRetry: a POST with a key runs once on replica A; its retries,
// on replica B and A again, with the key quoted (an sf-string) or bare,
// get its answer byte for byte, the allow-listed headers and
// Idempotent-Replayed, never Set-Cookie; the handler ran under a claim. A
// retry with a bad key (several lines naming different keys) is 400.
func IdempotentRetry(t *testing.T, a, b Adapter) {
	var p payment
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{}, Handler: p.handle})
	ctx := e.ctx(60 * time.Second)
	first := e.post(ctx, 0, "/pay/1", `{"amount":10}`, "Idempotency-Key", "k-1")
	wantRun(t, "first", first, http.StatusCreated, 1)
	if !strings.Contains(first.body, `"claimed":true`) || first.header.Get("Set-Cookie") == "" {
		t.Errorf("first: %q %v: the handler did not run under a claim, or its own answer lost its cookie", first.body, first.header)
	}
	for i, spelling := range []string{`"k-1"`, "k-1", ` "k-1" `} {
		r := e.post(ctx, 1-i%2, "/pay/1", `{"amount":10}`, "Idempotency-Key", spelling)
		wantReplay(t, fmt.Sprintf("retry %d (%s) on replica %d", i+1, spelling, 1-i%2), r, first)
	}
	r := e.post(ctx, 1, "/pay/1", `{"amount":10}`, "Idempotency-Key", "k-1", "Idempotency-Key", "k-2")
	wantRefused(t, "two lines naming different keys", r, http.StatusBadRequest)
	r = e.post(ctx, 0, "/pay/1", `{"amount":10}`, "Idempotency-Key", `"k-1"`, "Idempotency-Key", "k-1")
	wantReplay(t, "two lines naming one key", r, first)
	if n := p.runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}

// IdempotentConcurrent: duplicates sent at once, across both replicas:
// one runs (the witness counts one run), every other is answered 409 +
// Retry-After while it runs, never stored: once it completed, a retry gets
// its answer.
func IdempotentConcurrent(t *testing.T, a, b Adapter) {
	p := payment{entered: newSignal(), release: newSignal()}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{}, Handler: p.handle})
	ctx := e.ctx(60 * time.Second)
	const n = 10
	res := make([]response, n)
	var wg sync.WaitGroup
	var answered atomic.Int32
	allOthers := newSignal()
	for i := range n {
		wg.Go(func() {
			res[i] = e.post(ctx, i%2, "/pay/2", `{"amount":20}`, "Idempotency-Key", "dup")
			if answered.Add(1) == n-1 {
				allOthers.fire()
			}
		})
	}
	p.entered.wait(t, 20*time.Second, "one duplicate's handler")
	allOthers.wait(t, 20*time.Second, "the other duplicates' answers while the first runs")
	p.release.fire()
	wg.Wait()
	var ran response
	conflicts := 0
	for i, r := range res {
		switch r.status {
		case http.StatusCreated:
			ran = r
		case http.StatusConflict:
			conflicts++
			wantRefused(t, fmt.Sprintf("duplicate %d", i), r, http.StatusConflict)
		default:
			t.Errorf("duplicate %d: %d %q %v", i, r.status, r.body, r.err)
		}
	}
	if conflicts != n-1 || p.runs.Load() != 1 {
		t.Fatalf("%d conflicts, %d runs: want %d and 1", conflicts, p.runs.Load(), n-1)
	}
	wantReplay(t, "the retry after the run", e.post(ctx, 1, "/pay/2", `{"amount":20}`, "Idempotency-Key", "dup"), ran)
}

// IdempotentMismatch: the same key with another body is 422, decided
// before in-progress (while the first runs) and after it completed; the
// same body while it runs is 409.
func IdempotentMismatch(t *testing.T, a, b Adapter) {
	p := payment{entered: newSignal(), release: newSignal()}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{}, Handler: p.handle})
	ctx := e.ctx(60 * time.Second)
	done := make(chan response, 1)
	go func() { done <- e.post(ctx, 0, "/pay/3", `{"amount":30}`, "Idempotency-Key", "m") }()
	p.entered.wait(t, 20*time.Second, "the first request's handler")
	wantRefused(t, "another body while the first runs", e.post(ctx, 1, "/pay/3", `{"amount":31}`, "Idempotency-Key", "m"), http.StatusUnprocessableEntity)
	wantRefused(t, "another query while the first runs", e.post(ctx, 1, "/pay/3?x=1", `{"amount":30}`, "Idempotency-Key", "m"), http.StatusUnprocessableEntity)
	wantRefused(t, "the same body while the first runs", e.post(ctx, 1, "/pay/3", `{"amount":30}`, "Idempotency-Key", "m"), http.StatusConflict)
	p.release.fire()
	first := <-done
	wantRun(t, "first", first, http.StatusCreated, 1)
	wantRefused(t, "another body after", e.post(ctx, 0, "/pay/3", `{"amount":31}`, "Idempotency-Key", "m"), http.StatusUnprocessableEntity)
	wantReplay(t, "the same body after", e.post(ctx, 1, "/pay/3", `{"amount":30}`, "Idempotency-Key", "m"), first)
	if n := p.runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}

// IdempotentScope: one key sent by another tenant (a scope part), or to
// another route, or for another path parameter, runs on its own; a
// tenant's retry gets its own answer; a request without the scope's part
// is 400 and does not run.
func IdempotentScope(t *testing.T, a, b Adapter) {
	var p payment
	x := &Idempotency{Scope: "header:X-Tenant"}
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: payPath, Idempotency: x, Handler: p.handle},
		Route{Method: http.MethodPost, Path: "/refund/:id", Idempotency: x, Handler: p.handle},
	)
	ctx := e.ctx(60 * time.Second)
	t1 := e.post(ctx, 0, "/pay/4", `{}`, "Idempotency-Key", "s", "X-Tenant", "acme")
	wantRun(t, "tenant acme", t1, http.StatusCreated, 1)
	wantRun(t, "tenant globex, same key", e.post(ctx, 1, "/pay/4", `{}`, "Idempotency-Key", "s", "X-Tenant", "globex"), http.StatusCreated, 2)
	wantRun(t, "another route, same key", e.post(ctx, 0, "/refund/4", `{}`, "Idempotency-Key", "s", "X-Tenant", "acme"), http.StatusCreated, 3)
	wantReplay(t, "tenant acme's retry", e.post(ctx, 1, "/pay/4", `{}`, "Idempotency-Key", "s", "X-Tenant", "acme"), t1)
	wantRefused(t, "no tenant", e.post(ctx, 0, "/pay/4", `{}`, "Idempotency-Key", "s"), http.StatusBadRequest)
	if n := p.runs.Load(); n != 3 {
		t.Errorf("the handler ran %d times, want 3", n)
	}
}

// IdempotentKeyRules: on a route that requires a key, a POST without one
// is 400, as is a key that is no key (a space, a parameter, 256 bytes);
// neither runs. On a route that does not, a POST without a key runs every
// time, and so does a method that carries none (GET) with one.
func IdempotentKeyRules(t *testing.T, a, b Adapter) {
	var required, optional payment
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{Required: true}, Handler: required.handle},
		Route{Method: http.MethodPost, Path: "/open/:id", Idempotency: &Idempotency{}, Handler: optional.handle},
		Route{Method: http.MethodGet, Path: "/open/:id", Idempotency: &Idempotency{}, Handler: optional.handle},
	)
	ctx := e.ctx(60 * time.Second)
	wantRefused(t, "required, none", e.post(ctx, 0, "/pay/5", `{}`), http.StatusBadRequest)
	for _, bad := range []string{"a b", `"k"; p=1`, strings.Repeat("k", guard.MaxIdempotencyKeyLen+1), `"unterminated`} {
		wantRefused(t, fmt.Sprintf("key %.20q", bad), e.post(ctx, 1, "/pay/5", `{}`, "Idempotency-Key", bad), http.StatusBadRequest)
	}
	if n := required.runs.Load(); n != 0 {
		t.Errorf("a refused request ran (%d runs)", n)
	}
	wantRun(t, "optional, none", e.post(ctx, 0, "/open/5", `{}`), http.StatusCreated, 1)
	wantRun(t, "optional, none again", e.post(ctx, 1, "/open/5", `{}`), http.StatusCreated, 2)
	wantRun(t, "GET with a key", e.send(ctx, 0, http.MethodGet, "/open/5", "", "Idempotency-Key", "g"), http.StatusCreated, 3)
	wantRun(t, "GET with a key again", e.send(ctx, 1, http.MethodGet, "/open/5", "", "Idempotency-Key", "g"), http.StatusCreated, 4)
}

// IdempotentFailures: a 5xx is not stored, the retry runs again, and the
// answer it then gives is; a route that stores every answer replays the
// 5xx instead.
func IdempotentFailures(t *testing.T, a, b Adapter) {
	failFirst := func(n int32) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusCreated
	}
	p, every := payment{status: failFirst}, payment{status: failFirst}
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{}, Handler: p.handle},
		Route{Method: http.MethodPost, Path: "/every/:id", Idempotency: &Idempotency{StoreEveryAnswer: true}, Handler: every.handle},
	)
	ctx := e.ctx(60 * time.Second)
	wantRun(t, "a 502", e.post(ctx, 0, "/pay/6", `{}`, "Idempotency-Key", "f"), http.StatusBadGateway, 1)
	second := e.post(ctx, 1, "/pay/6", `{}`, "Idempotency-Key", "f")
	wantRun(t, "its retry runs", second, http.StatusCreated, 2)
	wantReplay(t, "the next retry", e.post(ctx, 0, "/pay/6", `{}`, "Idempotency-Key", "f"), second)
	failed := e.post(ctx, 0, "/every/6", `{}`, "Idempotency-Key", "f")
	wantRun(t, "a 502, every answer stored", failed, http.StatusBadGateway, 1)
	wantReplay(t, "its retry, every answer stored", e.post(ctx, 1, "/every/6", `{}`, "Idempotency-Key", "f"), failed)
	if p.runs.Load() != 2 || every.runs.Load() != 1 {
		t.Errorf("runs %d and %d, want 2 and 1", p.runs.Load(), every.runs.Load())
	}
}

// IdempotentBodyCap: a body over MaxBody is 413 and does not run; one at
// the cap runs.
func IdempotentBodyCap(t *testing.T, a, b Adapter) {
	var p payment
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{MaxBody: 16}, Handler: p.handle})
	ctx := e.ctx(60 * time.Second)
	wantRefused(t, "17 bytes", e.post(ctx, 0, "/pay/7", strings.Repeat("x", 17), "Idempotency-Key", "c"), http.StatusRequestEntityTooLarge)
	if n := p.runs.Load(); n != 0 {
		t.Errorf("a body over the cap ran (%d runs)", n)
	}
	wantRun(t, "16 bytes", e.post(ctx, 1, "/pay/7", strings.Repeat("x", 16), "Idempotency-Key", "c"), http.StatusCreated, 1)
}

// IdempotentRedisDown: with Redis down a request with a key is 503 +
// Retry-After and does not run (fail-closed); on a FailOpen route it runs
// without a claim, and the Observer is told.
func IdempotentRedisDown(t *testing.T, a, b Adapter) {
	var closed, open payment
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: payPath, Idempotency: &Idempotency{}, Handler: closed.handle},
		Route{Method: http.MethodPost, Path: "/open/:id", Idempotency: &Idempotency{FailOpen: true}, Handler: open.handle},
	)
	ctx := e.ctx(60 * time.Second)
	wantRun(t, "with Redis up", e.post(ctx, 0, "/pay/8", `{}`, "Idempotency-Key", "d"), http.StatusCreated, 1)
	e.srv.Kill()
	wantRefused(t, "fail-closed", e.post(ctx, 0, "/pay/8", `{}`, "Idempotency-Key", "d2"), http.StatusServiceUnavailable)
	if n := closed.runs.Load(); n != 1 {
		t.Errorf("the fail-closed handler ran with Redis down (%d runs)", n)
	}
	r := e.post(ctx, 1, "/open/8", `{}`, "Idempotency-Key", "d")
	wantRun(t, "fail-open", r, http.StatusCreated, 1)
	if !strings.Contains(r.body, `"claimed":false`) {
		t.Errorf("fail-open: %q: ran under a claim with Redis down", r.body)
	}
	e.reps[1].obs.await(t, 5*time.Second, "the Observer's Unlocked", func(r *recorder) bool { return len(r.unlocked) == 1 })
	if err := e.reps[1].obs.unlocked[0]; !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("Unlocked told %v, want ErrUnavailable", err)
	}
}

// IdempotentWithLock: idempotency in front of the route's lock. The first
// request runs under both (the claim and the lock, two leases); a replay
// never takes the lock (it is answered while the test holds it); the
// lock's own refusal (409, NoWait) is not stored: once the lock is free,
// the key's retry runs.
func IdempotentWithLock(t *testing.T, a, b Adapter) {
	var p payment
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: payPath, Key: "const:order,param:id", NoWait: true,
		Idempotency: &Idempotency{}, Handler: p.handle})
	ctx := e.ctx(60 * time.Second)
	first := e.post(ctx, 0, "/pay/9", `{}`, "Idempotency-Key", "l")
	wantRun(t, "first", first, http.StatusCreated, 1)
	p.mu.Lock()
	leases := p.leases
	p.mu.Unlock()
	if leases != 1 {
		t.Errorf("the first run held the lock and the claim as two leases %d times, want 1", leases)
	}
	held, err := e.reps[0].client.Acquire(ctx, "order:9", core.NoWait())
	if err != nil {
		t.Fatal(err)
	}
	wantReplay(t, "a retry while the lock is held", e.post(ctx, 1, "/pay/9", `{}`, "Idempotency-Key", "l"), first)
	r := e.post(ctx, 1, "/pay/9", `{}`, "Idempotency-Key", "l2")
	if r.status != http.StatusConflict || r.header.Get(guard.HeaderIdempotentReplayed) != "" {
		t.Errorf("another key while the lock is held: %d %q, want the lock's 409", r.status, r.body)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantRun(t, "its retry once the lock is free", e.post(ctx, 0, "/pay/9", `{}`, "Idempotency-Key", "l2"), http.StatusCreated, 2)
	testkit.WaitFor(t, 5*time.Second, "order:9 free", func() bool { _, h := e.held("order:9"); return !h })
}
