package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/testkit"
)

const (
	orderKey = "const:order,param:id"
	ttl      = 30 * time.Second // long: a lock freed early was freed by release, not expiry
)

func writeOK(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }

// handlerCount counts handler calls.
type handlerCount struct{ n atomic.Int32 }

func (h *handlerCount) wrap(f Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		h.n.Add(1)
		f(w, r, l, ok)
	}
}

// checkLease fails the request (599) when the adapter's accessor and
// core.LeaseFromContext on the handler's context disagree.
func checkLease(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) bool {
	cl, cok := core.LeaseFromContext(r.Context())
	if cok != ok || cl != l {
		http.Error(w, "Lease(c) and core.LeaseFromContext disagree", 599)
		return false
	}
	return true
}

// Exclusion: 50 concurrent requests for one order, split across replicas a
// and b and across the pay and refund routes; the handler does
// read-sleep-write on a shared counter. It must end at 50, no two handlers
// may overlap, fencing tokens must increase in handler order.
func Exclusion(t *testing.T, a, b Adapter) {
	var (
		counter, calls    atomic.Int64
		inside, overlaps  atomic.Int32
		mu                sync.Mutex
		tokens            []int64
		wrongKey, notHeld atomic.Int32
	)
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !checkLease(w, r, l, ok) {
			return
		}
		if !ok {
			notHeld.Add(1)
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		if l.Key() != "order:7" {
			wrongKey.Add(1)
		}
		mu.Lock()
		tokens = append(tokens, l.Token())
		mu.Unlock()
		v := counter.Load()
		time.Sleep(2 * time.Millisecond) // a critical section worth overlapping
		counter.Store(v + 1)
		calls.Add(1)
		inside.Add(-1)
		writeOK(w)
	}
	routes := []Route{
		{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Wait: 60 * time.Second, Handler: h},
		{Method: http.MethodPost, Path: "/orders/:id/refund", Key: orderKey, Wait: 60 * time.Second, Handler: h},
	}
	e := newEnv(t, a, b, ttl, routes...)
	ctx := e.ctx(120 * time.Second)
	const n = 50
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res[i] = e.do(ctx, i%2, http.MethodPost, "/orders/7/"+[]string{"pay", "refund"}[i/2%2])
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("request %d: status %d err %v body %q", i, r.status, r.err, r.body)
		}
	}
	if got := counter.Load(); got != n {
		t.Errorf("counter = %d, want %d (lost updates: handlers overlapped)", got, n)
	}
	if o := overlaps.Load(); o != 0 {
		t.Errorf("%d handlers overlapped", o)
	}
	if wrongKey.Load() != 0 || notHeld.Load() != 0 {
		t.Errorf("%d handlers saw another key, %d no lease", wrongKey.Load(), notHeld.Load())
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("fencing tokens not increasing in handler order at %d: %v", i, tokens)
			break
		}
	}
	contended := 0
	for _, r := range e.reps {
		r.obs.read(func(r *recorder) bool { contended += r.contended; return true })
	}
	if contended == 0 {
		t.Error("no acquire ever found the lock held: the requests did not contend, the test proves nothing")
	}
	testkit.WaitFor(t, 5*time.Second, "order:7 free after the last request", func() bool { _, held := e.held("order:7"); return !held })
}

// Parallel: requests for 10 different orders, split across both replicas,
// all reach a barrier inside their handlers together.
func Parallel(t *testing.T, a, b Adapter) {
	const n = 10
	var arrived atomic.Int32
	all := newSignal()
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		if arrived.Add(1) == n {
			all.fire()
		}
		select {
		case <-all.ch:
			ok2(w, l.Key())
		case <-time.After(20 * time.Second):
			http.Error(w, "barrier not reached: requests for different keys did not run together", http.StatusGatewayTimeout)
		}
	}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: h})
	ctx := e.ctx(60 * time.Second)
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i] = e.do(ctx, i%2, http.MethodPost, fmt.Sprintf("/orders/%d/pay", 100+i)) })
	}
	wg.Wait()
	for i, r := range res {
		if want := fmt.Sprintf("order:%d", 100+i); r.err != nil || r.status != http.StatusOK || r.body != want {
			t.Errorf("request %d: status %d err %v body %q (want key %q)", i, r.status, r.err, r.body, want)
		}
	}
}

func ok2(w http.ResponseWriter, body string) {
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
}

// checkProblem checks the body of an answer: RFC 9457 problem+json with
// the status, on every adapter under the framework's default error
// handling.
func checkProblem(t *testing.T, r response, status int, detail string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != guard.ProblemContentType {
		t.Errorf("Content-Type = %q, want %q", ct, guard.ProblemContentType)
	}
	var p guard.Problem
	if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.Status != status || p.Title == "" || p.Type == "" {
		t.Errorf("problem body %q (%v), want status %d", r.body, err, status)
	}
	if detail != "" && !strings.Contains(r.body, detail) {
		t.Errorf("body %q does not mention %q", r.body, detail)
	}
}

// NoWait: while one request holds the order, concurrent duplicates on the
// no-wait route get 409 + Retry-After at once, without their handler
// running; the winner then succeeds.
func NoWait(t *testing.T, a, b Adapter) {
	var calls handlerCount
	entered, release := newSignal(), newSignal()
	h := calls.wrap(func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		entered.fire()
		select {
		case <-release.ch:
		case <-time.After(30 * time.Second):
		}
		ok2(w, "shipped")
	})
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/ship", Key: orderKey, NoWait: true, Handler: h})
	ctx := e.ctx(60 * time.Second)
	winner := make(chan response, 1)
	go func() { winner <- e.do(ctx, 0, http.MethodPost, "/orders/1/ship") }()
	entered.wait(t, 10*time.Second, "the winner's handler")
	const dups = 6
	res := make([]response, dups)
	var wg sync.WaitGroup
	for i := range dups {
		wg.Go(func() { res[i] = e.do(ctx, i%2, http.MethodPost, "/orders/1/ship") })
	}
	wg.Wait()
	for i, r := range res {
		if r.err != nil || r.status != http.StatusConflict {
			t.Errorf("duplicate %d: status %d err %v body %q, want 409", i, r.status, r.err, r.body)
			continue
		}
		if ra := r.header.Get("Retry-After"); ra != "1" {
			t.Errorf("duplicate %d: Retry-After = %q, want \"1\"", i, ra)
		}
		checkProblem(t, r, http.StatusConflict, "")
	}
	if n := calls.n.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (duplicates must not run)", n)
	}
	release.fire()
	if r := <-winner; r.err != nil || r.status != http.StatusOK || r.body != "shipped" {
		t.Errorf("winner: status %d err %v body %q", r.status, r.err, r.body)
	}
}

// RedisDown: with Redis killed, a fail-closed route answers 503 +
// Retry-After without running its handler; a fail-open route runs its
// handler unlocked and the Observer is told.
func RedisDown(t *testing.T, a, b Adapter) {
	var closedCalls handlerCount
	var openLocked, openUnlocked atomic.Int32
	closed := closedCalls.wrap(func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) { ok2(w, "closed") })
	open := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !checkLease(w, r, l, ok) {
			return
		}
		if ok {
			openLocked.Add(1)
		} else {
			openUnlocked.Add(1)
		}
		ok2(w, "open")
	}
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/closed/:id", Key: "const:c,param:id", Handler: closed},
		Route{Method: http.MethodPost, Path: "/open/:id", Key: "const:o,param:id", FailOpen: true, Handler: open},
	)
	ctx := e.ctx(60 * time.Second)
	for _, p := range []string{"/closed/1", "/open/1"} { // both work while Redis is up
		if r := e.do(ctx, 0, http.MethodPost, p); r.status != http.StatusOK {
			t.Fatalf("%s with Redis up: %d %q %v", p, r.status, r.body, r.err)
		}
	}
	if closedCalls.n.Load() != 1 || openLocked.Load() != 1 {
		t.Fatalf("warm-up: closed ran %d, open locked %d", closedCalls.n.Load(), openLocked.Load())
	}
	e.srv.Kill()
	r := e.do(ctx, 0, http.MethodPost, "/closed/2")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("fail-closed with Redis down: status %d body %q err %v, want 503", r.status, r.body, r.err)
	}
	if ra := r.header.Get("Retry-After"); ra == "" {
		t.Error("503 without Retry-After")
	}
	checkProblem(t, r, http.StatusServiceUnavailable, "")
	if n := closedCalls.n.Load(); n != 1 {
		t.Errorf("fail-closed handler ran with Redis down (%d calls)", n)
	}
	r = e.do(ctx, 0, http.MethodPost, "/open/2")
	if r.status != http.StatusOK || r.body != "open" {
		t.Fatalf("fail-open with Redis down: status %d body %q err %v, want 200", r.status, r.body, r.err)
	}
	if openUnlocked.Load() != 1 {
		t.Errorf("fail-open handler ran unlocked %d times, want 1", openUnlocked.Load())
	}
	e.reps[0].obs.await(t, 5*time.Second, "the Observer's Unlocked", func(r *recorder) bool { return len(r.unlocked) == 1 })
	if err := e.reps[0].obs.unlocked[0]; !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("Unlocked told %v, want ErrUnavailable", err)
	}
}

// BadKey: a missing or empty header part answers 400 and the handler does
// not run; with the header the key is "tenant:<value>".
func BadKey(t *testing.T, a, b Adapter) {
	var calls handlerCount
	h := calls.wrap(func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		ok2(w, l.Key())
	})
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/tenant/export", Key: "const:tenant,header:X-Tenant", Handler: h})
	ctx := e.ctx(30 * time.Second)
	for _, hdr := range [][]string{nil, {"X-Tenant", ""}} {
		r := e.do(ctx, 0, http.MethodPost, "/tenant/export", hdr...)
		if r.status != http.StatusBadRequest {
			t.Errorf("header %q: status %d body %q err %v, want 400", hdr, r.status, r.body, r.err)
			continue
		}
		checkProblem(t, r, http.StatusBadRequest, "X-Tenant")
	}
	if n := calls.n.Load(); n != 0 {
		t.Errorf("handler ran %d times without a key", n)
	}
	if r := e.do(ctx, 1, http.MethodPost, "/tenant/export", "X-Tenant", "acme"); r.status != http.StatusOK || r.body != "tenant:acme" {
		t.Errorf("with header: status %d body %q err %v", r.status, r.body, r.err)
	}
}

// ControlChars: a control character is refused with 400 from every key
// source, a path parameter (after decoding), a header, a query value and a
// cookie, by one rule: the handler does not run, and the answer does not
// repeat the value (it may be a secret). The same request without it runs.
func ControlChars(t *testing.T, a, b Adapter) {
	var calls handlerCount
	h := calls.wrap(func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) { ok2(w, l.Key()) })
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id", Key: "const:order,param:id,header:X-Tenant,query:q,cookie:c", Handler: h})
	ctx := e.ctx(30 * time.Second)
	const secret = "s3cr3t"
	send := func(i int, id, tenant, q, c string) response {
		return e.do(ctx, i, http.MethodPost, "/orders/"+id+"?q="+q, "X-Tenant", tenant, "Cookie", "c="+c)
	}
	for i, tc := range []struct{ id, tenant, q, c string }{
		{secret + "%0A", "t", "q", "c"},
		{secret + "%00", "t", "q", "c"},
		{secret + "%7F", "t", "q", "c"},
		{secret + "%250A", "t", "q", "c"}, // nested: a control character once decoded to its end
		{"1", secret + "\tx", "q", "c"},   // the one control character a client can put in a header
		{"1", "t", secret + "%0A", "c"},
		{"1", "t", secret + "%00", "c"},
		{"1", "t", "q", secret + "%0A"},
		{"1", "t", "q", secret + "%09x"},
	} {
		r := send(i%2, tc.id, tc.tenant, tc.q, tc.c)
		if r.status != http.StatusBadRequest || strings.Contains(r.body, secret) {
			t.Errorf("%+v on %s: %d %q, want 400 that does not repeat the value", tc, e.reps[i%2].adapter.Name, r.status, r.body)
		}
	}
	if n := calls.n.Load(); n != 0 {
		t.Errorf("handler ran %d times with a control character in its key", n)
	}
	if r := send(0, "1", "t", "q", "c"); r.status != http.StatusOK || r.body != "order:1:t:q:c" {
		t.Errorf("without a control character: %d %q", r.status, r.body)
	}
}

// Misconfigured: a key part naming a path parameter the route does not
// have is the server's mistake: 500, handler not run.
func Misconfigured(t *testing.T, a, b Adapter) {
	var calls handlerCount
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/m/:id", Key: "const:m,param:nope",
		Handler: calls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { writeOK(w) })})
	r := e.do(e.ctx(30*time.Second), 0, http.MethodPost, "/m/1")
	if r.status != http.StatusInternalServerError {
		t.Errorf("status %d body %q err %v, want 500", r.status, r.body, r.err)
	}
	if n := calls.n.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
}

// literalKeys are keys HostileValues expects, written out by hand.
var literalKeys = map[[2]string]string{
	{"a:b", "c"}:   `t:a\:b:c`,
	{`x\`, "b:c"}:  `t:x\\:b\:c`,
	{`x:b\`, "c"}:  `t:x\:b\\:c`,
	{"{t}:x", "y"}: `t:{t}\:x:y`,
	{"ü日本:é", "x"}: `t:ü日本\:é:x`,
}

// HostileValues: header and query values with ':', '\', '/', braces,
// unicode and 10 KB give the key core.JoinKey gives, and pairs that a naive
// join would collide lock different keys: all requests hold their locks
// together (a barrier inside the handlers).
func HostileValues(t *testing.T, a, b Adapter) {
	big := strings.Repeat("x", 10<<10)
	pairs := [][2]string{
		{"a:b", "c"}, {"a", "b:c"}, // naive "t:a:b:c"
		{`a\`, ":b"}, {`a\:`, "b"}, {"a", `\:b`}, {`a\\`, `b`}, // escape-only-':' collisions
		{`x\`, "b:c"}, {`x:b\`, "c"}, // collide when '\' is left unescaped: both `t:x\:b\:c`
		{"a/b", "c"}, {"a", "/b/c"}, {"{t}", "x"}, {"{t}:x", "y"}, {"{", "}"},
		{"ü日本", "é"}, {"ü日本:é", "x"}, {"  spaced", "%2F&=?#"},
		{big, "1"}, {big + ":1", "2"}, {big[1:], "x1"},
	}
	n := int32(len(pairs))
	var arrived atomic.Int32
	all := newSignal()
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		want, err := core.JoinKey("t", r.Header.Get("X-A"), r.URL.Query().Get("q"))
		if literal, ok := literalKeys[[2]string{r.Header.Get("X-A"), r.URL.Query().Get("q")}]; ok {
			want = literal // written out, so a JoinKey that escapes wrongly cannot agree with itself
		}
		if err != nil || l.Key() != want {
			http.Error(w, fmt.Sprintf("key %q, want %q (%v)", l.Key(), want, err), http.StatusInternalServerError)
			return
		}
		if arrived.Add(1) == n {
			all.fire()
		}
		select {
		case <-all.ch:
			ok2(w, l.Key())
		case <-time.After(20 * time.Second):
			http.Error(w, "barrier not reached: two values share a lock", http.StatusGatewayTimeout)
		}
	}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodGet, Path: "/h", Key: "const:t,header:X-A,query:q", Wait: 2 * time.Second, Handler: h})
	ctx := e.ctx(60 * time.Second)
	res := make([]response, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() { res[i] = e.do(ctx, i%2, http.MethodGet, "/h?q="+url.QueryEscape(p[1]), "X-A", p[0]) })
	}
	wg.Wait()
	seen := map[string]int{}
	for i, r := range res {
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("pair %d (%.20q, %.20q): status %d err %v body %.200q", i, pairs[i][0], pairs[i][1], r.status, r.err, r.body)
			continue
		}
		if j, dup := seen[r.body]; dup {
			t.Errorf("pairs %d and %d share the key %.80q", j, i, r.body)
		}
		seen[r.body] = i
	}
}

// ClientHangsUp: a client hangs up while its handler holds the lock. The
// handler's context is cancelled, the lock stays held until the handler
// returns, and is free right after (TTL 30s: not by expiry); a waiter on
// the other replica then gets it.
func ClientHangsUp(t *testing.T, a, b Adapter) {
	skipClientGoneUnseen(t, a)
	entered, ctxDone, proceed, returned := newSignal(), newSignal(), newSignal(), newSignal()
	var token atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if r.Header.Get("X-Test-Id") != "hang" {
			ok2(w, "next")
			return
		}
		defer returned.fire()
		if !ok {
			return
		}
		token.Store(l.Token())
		entered.fire()
		select {
		case <-r.Context().Done():
			ctxDone.fire()
		case <-time.After(20 * time.Second):
			return
		}
		select {
		case <-proceed.ch:
		case <-time.After(20 * time.Second):
		}
	}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Wait: 20 * time.Second, Handler: h})
	ctx := e.ctx(60 * time.Second)
	cctx, hangUp := context.WithCancel(ctx)
	done := make(chan response, 1)
	go func() { done <- e.do(cctx, 0, http.MethodPost, "/orders/9/pay", "X-Test-Id", "hang") }()
	entered.wait(t, 10*time.Second, "the handler")
	hangUp()
	if r := <-done; r.err == nil {
		t.Fatalf("the hung-up request got a response: %d", r.status)
	}
	ctxDone.wait(t, 10*time.Second, "the handler's context to end after the client hung up")
	if hd, held := e.held("order:9"); !held || hd.Token != token.Load() {
		t.Fatalf("lock not held by the running handler after the hang-up: held %v token %d want %d", held, hd.Token, token.Load())
	}
	waiter := make(chan response, 1)
	go func() { waiter <- e.do(ctx, 1, http.MethodPost, "/orders/9/pay") }()
	e.reps[1].obs.await(t, 10*time.Second, "the waiter on replica B to find the lock held", func(r *recorder) bool { return r.contended > 0 })
	proceed.fire()
	returned.wait(t, 10*time.Second, "the handler to return")
	testkit.WaitFor(t, 5*time.Second, "the lock to be free right after the handler returned", func() bool {
		hd, held := e.held("order:9")
		return !held || hd.Token != token.Load()
	})
	if r := <-waiter; r.status != http.StatusOK || r.body != "next" {
		t.Errorf("waiter: status %d body %q err %v", r.status, r.body, r.err)
	}
}

// ClientGoneWhileWaiting: a client hangs up while its request waits for a
// held lock: the handler never runs, the wait ends as cancelled, and
// nothing is written (no body; at most the 499 status recorded for logs).
func ClientGoneWhileWaiting(t *testing.T, a, b Adapter) {
	skipClientGoneUnseen(t, a)
	var calls handlerCount
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Wait: 30 * time.Second,
		Handler: calls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { writeOK(w) })})
	ctx := e.ctx(60 * time.Second)
	l, err := e.reps[1].client.Acquire(ctx, "order:6")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	cctx, hangUp := context.WithCancel(ctx)
	done := make(chan response, 1)
	go func() { done <- e.do(cctx, 0, http.MethodPost, "/orders/6/pay", "X-Test-Id", "gone") }()
	obs := e.reps[0].obs
	obs.await(t, 10*time.Second, "the request to wait for the lock", func(r *recorder) bool { return r.contended > 0 })
	hangUp()
	<-done
	obs.await(t, 10*time.Second, "the wait to end as cancelled", func(r *recorder) bool { return r.outcomes[core.OutcomeCanceled] == 1 })
	var rec *writeRec
	testkit.WaitFor(t, 5*time.Second, "the server side to see the request", func() bool { rec = e.reps[0].written.get("gone"); return rec != nil })
	select {
	case <-rec.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler did not return")
	}
	e.reps[0].written.mu.Lock()
	status, n := rec.status, rec.bytes
	e.reps[0].written.mu.Unlock()
	if n != 0 || (status != 0 && status != 499) {
		t.Errorf("wrote status %d and %d body bytes to a client that was gone", status, n)
	}
	if c := calls.n.Load(); c != 0 {
		t.Errorf("handler ran %d times", c)
	}
}

// skipClientGoneUnseen skips t when a's framework does not end a request's
// context when its client goes away (Traits.ClientGoneUnseen).
func skipClientGoneUnseen(t *testing.T, a Adapter) {
	if a.Traits.ClientGoneUnseen {
		t.Skipf("%s does not end a request's context when its client goes away: a waiting request keeps waiting until its wait budget, a running handler runs to its end", a.Name)
	}
}

// PanicFreesLock: a handler panics (the framework's recovery in front): the
// lock is released before the 500 is written.
func PanicFreesLock(t *testing.T, a, b Adapter) {
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if r.Header.Get("X-Panic") != "" {
			panic("handler bug")
		}
		ok2(w, strconv.FormatInt(l.Token(), 10))
	}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: h},
		Route{Method: http.MethodPost, Path: "/orders/:id/ship", Key: orderKey, NoWait: true, Handler: h})
	ctx := e.ctx(30 * time.Second)
	r := e.do(ctx, 0, http.MethodPost, "/orders/3/pay", "X-Panic", "1")
	if r.status != http.StatusInternalServerError {
		t.Fatalf("panicking handler: status %d err %v, want the recovery's 500", r.status, r.err)
	}
	if _, held := e.held("order:3"); held {
		t.Fatal("lock still held after the panicking handler's 500 (TTL 30s)")
	}
	if r := e.do(ctx, 1, http.MethodPost, "/orders/3/ship"); r.status != http.StatusOK {
		t.Fatalf("no-wait request after the panic: %d %q", r.status, r.body)
	}
}

// OutlivesTTL: a handler running longer than 3×TTL (TTL 1s) keeps its lock
// (renewal), and when the key is deleted under it, its context is cancelled
// with cause ErrLost and the adapter reports the loss through its
// release-error hook once the handler returned.
func OutlivesTTL(t *testing.T, a, b Adapter) {
	const shortTTL = time.Second
	entered, survived, lost := newSignal(), newSignal(), newSignal()
	var (
		token      atomic.Int64
		earlyEnd   atomic.Value
		cause      atomic.Value
		probeCalls handlerCount
	)
	long := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		token.Store(l.Token())
		entered.fire()
		select {
		case <-r.Context().Done():
			earlyEnd.Store(fmt.Sprint(context.Cause(r.Context())))
		case <-time.After(3*shortTTL + shortTTL/2):
		}
		survived.fire()
		select {
		case <-r.Context().Done():
			cause.Store(context.Cause(r.Context()))
			lost.fire()
		case <-time.After(20 * time.Second):
		}
		ok2(w, "done")
	}
	relErr := make(chan error, 4)
	e := newEnv(t, a, b, shortTTL,
		Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: long, ReleaseError: func(err error) { relErr <- err }},
		Route{Method: http.MethodPost, Path: "/orders/:id/ship", Key: orderKey, NoWait: true,
			Handler: probeCalls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { writeOK(w) })})
	ctx := e.ctx(60 * time.Second)
	done := make(chan response, 1)
	go func() { done <- e.do(ctx, 0, http.MethodPost, "/orders/5/pay") }()
	entered.wait(t, 10*time.Second, "the handler")
	survived.wait(t, 15*time.Second, "3.5×TTL to pass in the handler")
	if v := earlyEnd.Load(); v != nil {
		t.Fatalf("the handler's context ended before 3.5×TTL: %v", v)
	}
	if hd, held := e.held("order:5"); !held || hd.Token != token.Load() {
		t.Fatalf("after 3.5×TTL: held %v token %d, want held by token %d", held, hd.Token, token.Load())
	}
	if r := e.do(ctx, 1, http.MethodPost, "/orders/5/ship"); r.status != http.StatusConflict || probeCalls.n.Load() != 0 {
		t.Fatalf("no-wait probe after 3.5×TTL: status %d, want 409", r.status)
	}
	if n, err := e.srv.Client.Del(ctx, "lockkit:v1:k:order:5").Result(); err != nil || n != 1 {
		t.Fatalf("DEL the lock: %d %v", n, err)
	}
	lost.wait(t, 10*time.Second, "the handler's context to end after the key was deleted")
	if c, _ := cause.Load().(error); !errors.Is(c, core.ErrLost) {
		t.Errorf("context.Cause = %v, want ErrLost", c)
	}
	if r := <-done; r.status != http.StatusOK {
		t.Errorf("long request: %d %q %v", r.status, r.body, r.err)
	}
	// Every adapter reports the loss at release the same way: its release-error hook.
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrLost) {
		t.Errorf("release-error hook got %v, want ErrLost", err)
	}
}

// Deadline: the request's deadline passes while it waits for a held lock:
// 503 + Retry-After, handler not run.
func Deadline(t *testing.T, a, b Adapter) {
	var calls handlerCount
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Deadline: time.Second,
		Handler: calls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { writeOK(w) })})
	ctx := e.ctx(30 * time.Second)
	l, err := e.reps[1].client.Acquire(ctx, "order:4")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	r := e.do(ctx, 0, http.MethodPost, "/orders/4/pay")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d Retry-After %q body %q err %v, want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body, r.err)
	}
	checkProblem(t, r, http.StatusServiceUnavailable, "deadline")
	if n := calls.n.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
}

// TokenHeader: the configured response header carries the fencing token
// the handler holds, increasing from request to request.
func TokenHeader(t *testing.T, a, b Adapter) {
	h := func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		ok2(w, strconv.FormatInt(l.Token(), 10))
	}
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, TokenHeader: "Lock-Token", Handler: h},
		Route{Method: http.MethodPost, Path: "/orders/:id/refund", Key: orderKey, Handler: h})
	ctx := e.ctx(30 * time.Second)
	var last int64
	for i := range 3 {
		r := e.do(ctx, i%2, http.MethodPost, "/orders/8/pay")
		tok, err := strconv.ParseInt(r.header.Get("Lock-Token"), 10, 64)
		if r.status != http.StatusOK || err != nil || strconv.FormatInt(tok, 10) != r.body || tok <= last {
			t.Fatalf("request %d: status %d Lock-Token %q body %q (last %d)", i, r.status, r.header.Get("Lock-Token"), r.body, last)
		}
		last = tok
	}
	if r := e.do(ctx, 0, http.MethodPost, "/orders/8/refund"); r.header.Get("Lock-Token") != "" {
		t.Errorf("Lock-Token set on a route without TokenHeader: %q", r.header.Get("Lock-Token"))
	}
}

// RedisFrozen: a redis-server that stops answering (SIGSTOP) while the wait
// budget (300ms) is shorter than the I/O timeout (2s), itself shorter than
// the request's deadline. Nobody holds the order, so the answer is 503 +
// Retry-After, never 409 "locked by another request"; a fail-open route runs
// its handler unlocked; a request whose own deadline (150ms) passes first
// gets the deadline's 503 and a fail-open handler never runs for it.
func RedisFrozen(t *testing.T, a, b Adapter) {
	var closedCalls, expiredCalls handlerCount
	var openUnlocked atomic.Int32
	closed := closedCalls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { ok2(w, "closed") })
	open := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			openUnlocked.Add(1)
		}
		ok2(w, "open")
	}
	expired := expiredCalls.wrap(func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) { ok2(w, "expired") })
	const budget = 300 * time.Millisecond
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/closed/:id", Key: "const:c,param:id", Wait: budget, Handler: closed},
		Route{Method: http.MethodPost, Path: "/open/:id", Key: "const:o,param:id", Wait: budget, FailOpen: true, Handler: open},
		Route{Method: http.MethodPost, Path: "/expired/:id", Key: "const:e,param:id", Wait: 5 * time.Second, FailOpen: true,
			Deadline: 150 * time.Millisecond, Handler: expired},
	)
	ctx := e.ctx(60 * time.Second)
	if r := e.do(ctx, 0, http.MethodPost, "/closed/0"); r.status != http.StatusOK {
		t.Fatalf("warm-up: %d %q %v", r.status, r.body, r.err)
	}
	e.srv.Pause()
	defer e.srv.Resume()
	r := e.do(ctx, 0, http.MethodPost, "/closed/1")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("fail-closed, Redis frozen, nobody holds the order: %d Retry-After %q %q, want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	checkProblem(t, r, http.StatusServiceUnavailable, "unavailable")
	if n := closedCalls.n.Load(); n != 1 {
		t.Errorf("fail-closed handler ran with Redis frozen (%d calls)", n)
	}
	if r := e.do(ctx, 0, http.MethodPost, "/open/1"); r.status != http.StatusOK || r.body != "open" || openUnlocked.Load() != 1 {
		t.Errorf("fail-open, Redis frozen: %d %q (unlocked runs %d), want 200 run unlocked", r.status, r.body, openUnlocked.Load())
	}
	r = e.do(ctx, 0, http.MethodPost, "/expired/1")
	if r.status != http.StatusServiceUnavailable || expiredCalls.n.Load() != 0 {
		t.Errorf("request deadline before the budget, Redis frozen: %d %q, handler ran %d times; want 503, not run", r.status, r.body, expiredCalls.n.Load())
	}
	checkProblem(t, r, http.StatusServiceUnavailable, "deadline")
	e.srv.Resume()
	testkit.WaitFor(t, 15*time.Second, "the service to answer again after Redis resumed", func() bool {
		return e.do(ctx, 0, http.MethodPost, "/closed/2").status == http.StatusOK
	})
}

// Draining: the server shuts down gracefully (http.Server.Shutdown) while a
// request holds an order and another waits for it: both complete, in
// order, under the lock, and Shutdown returns once they have; the Client is
// closed after. Then, on a fresh pair, the Client is closed while a request
// holds and another waits on a fail-open route: the holder's context ends
// with cause core.ErrClosed, and the waiter is answered 503, never run
// unlocked beside the lock's next holder.
func Draining(t *testing.T, a, b Adapter) {
	t.Run("shutdown then close", func(t *testing.T) {
		entered, release := make(chan int64, 2), make(chan struct{})
		h := func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			if !ok {
				http.Error(w, "no lease", http.StatusInternalServerError)
				return
			}
			entered <- l.Token()
			<-release
			writeOK(w)
		}
		e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: h})
		ctx := e.ctx(30 * time.Second)
		rep := e.reps[0]
		first, second := make(chan response, 1), make(chan response, 1)
		go func() { first <- e.do(ctx, 0, http.MethodPost, "/orders/9/pay") }()
		t1 := testkit.Recv(t, entered, 10*time.Second, "the first request's handler")
		go func() { second <- e.do(ctx, 0, http.MethodPost, "/orders/9/pay") }()
		rep.obs.await(t, 10*time.Second, "the second request to wait", func(r *recorder) bool { return r.contended >= 1 })
		shut := make(chan error, 1)
		go func() { shut <- rep.server.Shutdown(ctx) }()
		close(release)
		t2 := testkit.Recv(t, entered, 10*time.Second, "the second request's handler")
		if r := testkit.Recv(t, first, 10*time.Second, "the first answer"); r.status != http.StatusOK {
			t.Fatalf("first request during shutdown: %d %q %v", r.status, r.body, r.err)
		}
		if r := testkit.Recv(t, second, 10*time.Second, "the second answer"); r.status != http.StatusOK {
			t.Fatalf("waiting request during shutdown: %d %q %v", r.status, r.body, r.err)
		}
		if err := testkit.Recv(t, shut, 10*time.Second, "Shutdown"); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if t2 <= t1 {
			t.Fatalf("tokens %d then %d", t1, t2)
		}
		if err := rep.client.Close(); err != nil {
			t.Fatalf("Close after the drain: %v", err)
		}
		if _, held, err := e.reps[1].client.Inspect(ctx, "order:9"); err != nil || held {
			t.Fatalf("order:9 after the drain: held %v, %v", held, err)
		}
	})
	t.Run("close while in flight", func(t *testing.T) {
		entered, causes := make(chan struct{}, 1), make(chan error, 1)
		var ran atomic.Int32
		e := newEnv(t, a, b, ttl,
			Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: func(w http.ResponseWriter, r *http.Request, _ *core.Lease, _ bool) {
				entered <- struct{}{}
				<-r.Context().Done()
				causes <- context.Cause(r.Context())
				writeOK(w)
			}},
			Route{Method: http.MethodPost, Path: "/orders/:id/refund", Key: orderKey, FailOpen: true, Handler: func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, _ bool) {
				ran.Add(1)
				writeOK(w)
			}})
		ctx := e.ctx(30 * time.Second)
		rep := e.reps[0]
		holder, waiter := make(chan response, 1), make(chan response, 1)
		go func() { holder <- e.do(ctx, 0, http.MethodPost, "/orders/10/pay") }()
		testkit.Recv(t, entered, 10*time.Second, "the holder's handler")
		go func() { waiter <- e.do(ctx, 0, http.MethodPost, "/orders/10/refund") }()
		rep.obs.await(t, 10*time.Second, "the waiter to wait", func(r *recorder) bool { return r.contended >= 1 })
		_ = rep.client.Close()
		if c := testkit.Recv(t, causes, 10*time.Second, "the holder's context to end"); !errors.Is(c, core.ErrClosed) {
			t.Errorf("holder's context cause %v, want ErrClosed", c)
		}
		if r := testkit.Recv(t, waiter, 10*time.Second, "the waiter's answer"); r.status != http.StatusServiceUnavailable || ran.Load() != 0 {
			t.Errorf("waiter on a fail-open route when the Client closed: %d %q, ran %d; want 503, not run", r.status, r.body, ran.Load())
		}
		testkit.Recv(t, holder, 10*time.Second, "the holder's answer")
	})
}

// OptionsLocked: a handler that serves OPTIONS as well as POST (a
// method-less ServeMux pattern, gin's Any) runs under the lock for every
// OPTIONS, a CORS preflight too: its Origin and Access-Control-Request-Method
// are headers any client sends, so they exempt nothing. 60 concurrent
// requests for one order across both replicas, POSTs, OPTIONS with no
// Origin, with one, and forged preflights, do read-sleep-write on a
// counter: it ends at 60, every handler held the lease and no two overlap.
func OptionsLocked(t *testing.T, a, b Adapter) {
	w := newWitness()
	var routes []Route
	for _, m := range []string{http.MethodPost, http.MethodOptions} {
		routes = append(routes, Route{Method: m, Path: "/orders/:id/pay", Key: orderKey, Wait: 60 * time.Second, Handler: w.handler})
	}
	e := newEnv(t, a, b, ttl, routes...)
	w.run(t, e, "/orders/8/pay", preflightMix(false))
}

// CORSPreflights: the same mix of requests (OptionsLocked), with a real
// preflight and one forged from the server's own origin among them, on a
// route behind the framework's common CORS middleware (Route.CORS), placed
// before the lock and after it. Whatever the CORS middleware answers itself
// runs no handler; whatever it passes on is locked: every handler that ran
// held the lease, none overlapped, and the counter counts every one.
func CORSPreflights(t *testing.T, a, b Adapter) {
	for _, place := range []CORSPlace{CORSBefore, CORSAfter} {
		t.Run(place.String(), func(t *testing.T) {
			w := newWitness()
			var routes []Route
			for _, m := range []string{http.MethodPost, http.MethodOptions} {
				routes = append(routes, Route{Method: m, Path: "/orders/:id/pay", Key: orderKey, Wait: 60 * time.Second, CORS: place, Handler: w.handler})
			}
			e := newEnv(t, a, b, ttl, routes...)
			w.run(t, e, "/orders/9/pay", preflightMix(true))
		})
	}
}

// selfOrigin stands for the origin of the replica a request goes to.
const selfOrigin = "<self>"

// preflightMix is the requests OptionsLocked and CORSPreflights send, by
// index: a POST, an OPTIONS, a cross-origin OPTIONS, forged preflights
// (from another origin; with self, also from the server's own, which CORS
// middlewares let through as same-origin) and a real one from CORSOrigin.
// Each is the method, then header name/value pairs.
func preflightMix(self bool) [][]string {
	acrm := "Access-Control-Request-Method"
	mix := [][]string{
		{http.MethodPost},
		{http.MethodPost, "Origin", CORSOrigin},
		{http.MethodOptions},
		{http.MethodOptions, "Origin", "https://evil.example"},
		{http.MethodOptions, "Origin", "https://evil.example", acrm, http.MethodPost},
		{http.MethodOptions, "Origin", CORSOrigin, acrm, http.MethodPost},
	}
	if self {
		mix = append(mix, []string{http.MethodOptions, "Origin", selfOrigin, acrm, http.MethodPost})
	}
	return mix
}

// witness is an overlap counter behind a route's handler: every run must
// hold the lease, and does read-sleep-write on a counter (one that runs
// without the lease too, so that a bypass shows as lost updates).
type witness struct {
	counter, ran      atomic.Int64
	inside, overlaps  atomic.Int32
	notHeld, mismatch atomic.Int32
}

func newWitness() *witness { return &witness{} }

func (wt *witness) handler(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
	if !checkLease(w, r, l, ok) {
		wt.mismatch.Add(1)
		return
	}
	wt.ran.Add(1)
	if !ok {
		wt.notHeld.Add(1)
	}
	if wt.inside.Add(1) != 1 {
		wt.overlaps.Add(1)
	}
	v := wt.counter.Load()
	time.Sleep(2 * time.Millisecond) // a critical section worth overlapping
	wt.counter.Store(v + 1)
	wt.inside.Add(-1)
	writeOK(w)
}

// run sends 10 rounds of mix to path, alternating replicas, all at once,
// and checks the witness: every answer 200, or 204 or 403 (a CORS
// middleware's own), every handler run held the lease, none overlapped, no
// update lost.
func (wt *witness) run(t *testing.T, e *env, path string, mix [][]string) {
	t.Helper()
	ctx := e.ctx(120 * time.Second)
	n := 10 * len(mix)
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := append([]string(nil), mix[i%len(mix)]...)
			for j := range req {
				if req[j] == selfOrigin {
					req[j] = e.reps[i%2].url
				}
			}
			res[i] = e.do(ctx, i%2, req[0], path, req[1:]...)
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.err != nil || (r.status != http.StatusOK && r.status != http.StatusNoContent && r.status != http.StatusForbidden) {
			t.Errorf("request %d (%v): status %d err %v body %q", i, mix[i%len(mix)], r.status, r.err, r.body)
		}
	}
	ran := wt.ran.Load()
	if ran == 0 {
		t.Fatal("no handler ran")
	}
	if got := wt.counter.Load(); got != ran {
		t.Errorf("counter = %d after %d handler runs: updates lost (a request ran beside the holder)", got, ran)
	}
	if o, nh, mm := wt.overlaps.Load(), wt.notHeld.Load(), wt.mismatch.Load(); o != 0 || nh != 0 || mm != 0 {
		t.Errorf("%d handlers overlapped, %d ran without the lease, %d saw Lease and the context disagree", o, nh, mm)
	}
}

// MaxHold: a handler that holds its lock past the route's MaxHold (300ms)
// sees its context end with cause core.ErrMaxHold, and keeps running: the
// lock stays held by its token while it does, and a request waiting for the
// order on the other replica keeps waiting. The lock is released as the
// handler returns, so the waiting request is served right after it (TTL
// 30s: freed by the release, not the expiry), never beside it, and the
// release-error hook hears core.ErrMaxHold.
func MaxHold(t *testing.T, a, b Adapter) {
	entered, ended, proceed, returned := newSignal(), newSignal(), newSignal(), newSignal()
	defer proceed.fire() // a failing check does not park the handler
	var cause atomic.Value
	var token atomic.Int64
	var overlap atomic.Bool
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		if r.Header.Get("X-Hold") == "" { // the next request
			select {
			case <-returned.ch:
			default:
				overlap.Store(true)
			}
			ok2(w, "next")
			return
		}
		defer returned.fire()
		token.Store(l.Token())
		entered.fire()
		select {
		case <-r.Context().Done():
			cause.Store(context.Cause(r.Context()))
			ended.fire()
		case <-time.After(20 * time.Second):
			return
		}
		select { // still running past MaxHold, until the test has looked
		case <-proceed.ch:
		case <-time.After(20 * time.Second):
		}
		returned.fire() // its work is over; the answer's write may free the lock if it stalls (guard.IOGrace)
		ok2(w, "held")
	}
	relErr := make(chan error, 4)
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Wait: 20 * time.Second,
		MaxHold: 300 * time.Millisecond, Handler: h, ReleaseError: func(err error) { relErr <- err }})
	ctx := e.ctx(60 * time.Second)
	first := make(chan response, 1)
	go func() { first <- e.do(ctx, 0, http.MethodPost, "/orders/12/pay", "X-Hold", "1") }()
	entered.wait(t, 10*time.Second, "the holder's handler")
	ended.wait(t, 10*time.Second, "the holder's context to end at its MaxHold")
	if c, _ := cause.Load().(error); !errors.Is(c, core.ErrMaxHold) {
		t.Fatalf("the holder's context ended with %v, want core.ErrMaxHold", c)
	}
	stillHeld := func(when string) {
		t.Helper()
		if hd, held := e.held("order:12"); !held || hd.Token != token.Load() {
			t.Fatalf("past MaxHold, with the handler still running, %s: held %v token %d, want held with %d", when, held, hd.Token, token.Load())
		}
	}
	stillHeld("before the next request")
	next := make(chan response, 1)
	go func() { next <- e.do(ctx, 1, http.MethodPost, "/orders/12/pay") }()
	e.reps[1].obs.await(t, 10*time.Second, "the next request on replica B to find the lock held", func(r *recorder) bool { return r.contended > 0 })
	stillHeld("with the next request waiting")
	proceed.fire()
	if r := testkit.Recv(t, first, 10*time.Second, "the holder's answer"); r.status != http.StatusOK {
		t.Fatalf("holder answered %d %q", r.status, r.body)
	}
	if r := testkit.Recv(t, next, 10*time.Second, "the next request"); r.status != http.StatusOK || r.body != "next" {
		t.Fatalf("the next request: %d %q %v", r.status, r.body, r.err)
	}
	if overlap.Load() {
		t.Error("the next request ran before the holder past its MaxHold returned")
	}
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("release-error hook got %v, want core.ErrMaxHold", err)
	}
}
