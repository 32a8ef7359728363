package conformance

import (
	"context"
	"encoding/json"
	"fmt"
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

// gate holds handlers inside until it is opened, and counts them: a
// barrier that proves parallelism (n inside at once) without a stopwatch.
type gate struct {
	inside, most atomic.Int32
	entered      chan struct{}
	open         chan struct{}
	once         sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 256), open: make(chan struct{})} }

// enter counts a handler in, waits for the gate (bounded), counts it out.
func (g *gate) enter() {
	v := g.inside.Add(1)
	for m := g.most.Load(); v > m && !g.most.CompareAndSwap(m, v); m = g.most.Load() {
	}
	g.entered <- struct{}{}
	select {
	case <-g.open:
	case <-time.After(20 * time.Second):
	}
	g.inside.Add(-1)
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// waitInside waits until n handlers are inside at once.
func (g *gate) waitInside(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for g.inside.Load() < int32(n) {
		select {
		case <-g.entered:
		case <-deadline:
			t.Fatalf("%d handlers inside at once, want %d", g.inside.Load(), n)
		}
	}
}

// Limit: a route with Limit 2 runs two requests of one key at once (both
// reach a barrier together, on different replicas), answers a third past
// its wait budget 429 with Retry-After and a problem+json body, and under
// a burst across both replicas never has more than two inside.
func Limit(t *testing.T, a, b Adapter) {
	g := newGate()
	var late atomic.Bool // the burst: handlers pass the gate
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !checkLease(w, r, l, ok) {
			return
		}
		if !ok || l.Key() != "export:t1" {
			http.Error(w, "no permit", http.StatusInternalServerError)
			return
		}
		if late.Load() {
			v := g.inside.Add(1)
			for m := g.most.Load(); v > m && !g.most.CompareAndSwap(m, v); m = g.most.Load() {
			}
			time.Sleep(2 * time.Millisecond) // the export's work
			g.inside.Add(-1)
		} else {
			g.enter()
		}
		writeOK(w)
	}
	routes := []Route{
		{Method: http.MethodPost, Path: "/exports/:tenant", Key: "const:export,param:tenant", Limit: 2, Wait: 60 * time.Second, Handler: h},
		{Method: http.MethodPost, Path: "/exports/:tenant/now", Key: "const:export,param:tenant", Limit: 2, Wait: 200 * time.Millisecond, Handler: h},
	}
	e := newEnv(t, a, b, ttl, routes...)
	ctx := e.ctx(120 * time.Second)
	first := make(chan response, 2)
	for i := range 2 {
		go func() { first <- e.do(ctx, i, http.MethodPost, "/exports/t1") }()
	}
	g.waitInside(t, 2) // two permits of one key at once, one per replica
	r := e.do(ctx, 0, http.MethodPost, "/exports/t1/now")
	if r.status != http.StatusTooManyRequests || r.header.Get(guard.HeaderRetryAfter) == "" || !strings.HasPrefix(r.header.Get("Content-Type"), guard.ProblemContentType) {
		t.Errorf("third request with both permits held: %d %v %q", r.status, r.header, r.body)
	}
	var p guard.Problem
	if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.Status != http.StatusTooManyRequests {
		t.Errorf("429 body %q: %v", r.body, err)
	}
	g.release()
	for range 2 {
		if r := <-first; r.status != http.StatusOK {
			t.Errorf("holder: %d %q %v", r.status, r.body, r.err)
		}
	}
	g.most.Store(0)
	late.Store(true)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if r := e.do(ctx, i%2, http.MethodPost, "/exports/t1"); r.status != http.StatusOK {
				t.Errorf("burst request: %d %q %v", r.status, r.body, r.err)
			}
		})
	}
	wg.Wait()
	if m := g.most.Load(); m > 2 {
		t.Errorf("%d handlers of one key inside at once, limit 2", m)
	}
}

// ReadWrite: with the read/write lock by method, GETs of one document run
// together (a barrier both reach, one per replica) and a POST waits for
// them (409 past its budget while they hold); under a mixed burst no POST
// handler overlaps any other handler of the document.
func ReadWrite(t *testing.T, a, b Adapter) {
	g := newGate()
	var mixed atomic.Bool
	var readers, writers, conflicts atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !checkLease(w, r, l, ok) {
			return
		}
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		switch {
		case !mixed.Load():
			g.enter()
		case r.Method == http.MethodGet:
			readers.Add(1)
			if writers.Load() != 0 {
				conflicts.Add(1)
			}
			time.Sleep(time.Millisecond)
			readers.Add(-1)
		default:
			if writers.Add(1) != 1 || readers.Load() != 0 {
				conflicts.Add(1)
			}
			time.Sleep(time.Millisecond)
			writers.Add(-1)
		}
		writeOK(w)
	}
	routes := []Route{
		{Method: http.MethodGet, Path: "/docs/:id", Key: "const:doc,param:id", RW: RWByMethod, Wait: 60 * time.Second, Handler: h},
		{Method: http.MethodPost, Path: "/docs/:id", Key: "const:doc,param:id", RW: RWByMethod, Wait: 60 * time.Second, Handler: h},
		{Method: http.MethodPost, Path: "/docs/:id/now", Key: "const:doc,param:id", RW: RWWrite, Wait: 200 * time.Millisecond, Handler: h},
	}
	e := newEnv(t, a, b, ttl, routes...)
	ctx := e.ctx(120 * time.Second)
	first := make(chan response, 2)
	for i := range 2 {
		go func() { first <- e.do(ctx, i, http.MethodGet, "/docs/d1") }()
	}
	g.waitInside(t, 2) // two readers at once
	if r := e.do(ctx, 1, http.MethodPost, "/docs/d1/now"); r.status != http.StatusConflict {
		t.Errorf("a write while two read: %d %q", r.status, r.body)
	}
	g.release()
	for range 2 {
		if r := <-first; r.status != http.StatusOK {
			t.Errorf("reader: %d %q %v", r.status, r.body, r.err)
		}
	}
	mixed.Store(true)
	var wg sync.WaitGroup
	for i := range 30 {
		method := http.MethodGet
		if i%3 == 0 {
			method = http.MethodPost
		}
		wg.Go(func() {
			if r := e.do(ctx, i%2, method, "/docs/d1"); r.status != http.StatusOK {
				t.Errorf("%s: %d %q %v", method, r.status, r.body, r.err)
			}
		})
	}
	wg.Wait()
	if c := conflicts.Load(); c != 0 {
		t.Errorf("%d handlers ran beside a writer", c)
	}
}

// MultiKey: a transfer route locks both accounts it names (two key specs),
// all or nothing. Transfers in both directions between three accounts,
// across both replicas, all finish (no deadlock), no two handlers touch
// one account at once, and the token header carries one token per key.
func MultiKey(t *testing.T, a, b Adapter) {
	var mu sync.Mutex
	inside := map[string]int{}
	var overlaps, wrongLeases atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !checkLease(w, r, l, ok) {
			return
		}
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // transfer/<from>/<to>
		accts := parts[1:3]
		mu.Lock()
		for _, acct := range accts {
			if inside[acct]++; inside[acct] > 1 {
				overlaps.Add(1)
			}
		}
		mu.Unlock()
		time.Sleep(time.Millisecond) // the transfer's work on both
		mu.Lock()
		for _, acct := range accts {
			inside[acct]--
		}
		mu.Unlock()
		writeOK(w)
	}
	routes := []Route{{
		Method: http.MethodPost, Path: "/transfer/:from/:to", Key: "const:acct,param:from", MoreKeys: []string{"const:acct,param:to"},
		Wait: 60 * time.Second, TokenHeader: "Lock-Token", Handler: h,
	}}
	e := newEnv(t, a, b, ttl, routes...)
	ctx := e.ctx(120 * time.Second)
	pairs := [][2]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "b"}, {"c", "a"}, {"a", "c"}}
	var wg sync.WaitGroup
	for i := range 36 {
		p := pairs[i%len(pairs)]
		wg.Go(func() {
			r := e.do(ctx, i%2, http.MethodPost, fmt.Sprintf("/transfer/%s/%s", p[0], p[1]))
			if r.status != http.StatusOK {
				t.Errorf("transfer %v: %d %q %v", p, r.status, r.body, r.err)
				return
			}
			if toks := strings.Split(r.header.Get("Lock-Token"), ","); len(toks) != 2 {
				wrongLeases.Add(1)
			}
		})
	}
	wg.Wait()
	if o := overlaps.Load(); o != 0 {
		t.Errorf("%d times an account had two transfers inside", o)
	}
	if n := wrongLeases.Load(); n != 0 {
		t.Errorf("%d answers without one token per key", n)
	}
}

// holdFor takes, on client, what keeps a route of the given kind waiting
// on key: the mutex, the one permit of a semaphore of 1, the read side
// against a writer, the write side against a reader.
func holdFor(ctx context.Context, client *core.Client, key string, limit int, rw RW) (*core.Lease, error) {
	switch {
	case limit > 0:
		return client.Semaphore(key, limit).Acquire(ctx)
	case rw == RWRead:
		return client.RWLock(key).Lock(ctx)
	case rw != RWNone:
		return client.RWLock(key).RLock(ctx)
	}
	return client.Acquire(ctx, key)
}

// maxWaitersKinds are the kinds MaxWaitersBound and RPCMaxWaiters bound,
// with the status a refusal gets.
var maxWaitersKinds = []struct {
	name  string
	limit int
	rw    RW
	http  int
}{
	{"mutex", 0, RWNone, http.StatusConflict},
	{"semaphore", 1, RWNone, http.StatusTooManyRequests},
	{"read side", 0, RWRead, http.StatusConflict},
	{"write side", 0, RWWrite, http.StatusConflict},
}

// MaxWaitersBound: core.MaxWaiters(1) given through the adapter's
// AcquireOptions bounds the replica's local queue for every kind of lock:
// with the lock held and one request waiting on the replica, four more are
// refused at once (409, 429 for a semaphore), their handlers not run,
// while the first still waits; it is served once the lock frees.
func MaxWaitersBound(t *testing.T, a, b Adapter) {
	for _, k := range maxWaitersKinds {
		t.Run(k.name, func(t *testing.T) {
			var calls atomic.Int32
			e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Limit: k.limit, RW: k.rw,
				Wait: 60 * time.Second, AcquireOptions: []core.AcquireOption{core.MaxWaiters(1)},
				Handler: func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, ok bool) {
					calls.Add(1)
					writeOK(w)
				}})
			ctx := e.ctx(60 * time.Second)
			held, err := holdFor(ctx, e.reps[1].client, "order:1", k.limit, k.rw)
			if err != nil {
				t.Fatal(err)
			}
			first := make(chan response, 1)
			go func() { first <- e.do(ctx, 0, http.MethodPost, "/orders/1/pay") }()
			testkit.WaitFor(t, 10*time.Second, "the first request waiting", func() bool { return e.reps[0].client.Stats().Waiters == 1 })
			for i := range 4 {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second) // refused at once, not after a wait
				r := e.do(rctx, 0, http.MethodPost, "/orders/1/pay")
				cancel()
				if r.status != k.http {
					t.Errorf("request %d beyond MaxWaiters(1): %d %q %v, want %d at once", i, r.status, r.body, r.err, k.http)
				}
			}
			if n := e.reps[0].client.Stats().Waiters; n != 1 || calls.Load() != 0 {
				t.Errorf("after the refusals: %d waiting (want the first), %d handlers ran", n, calls.Load())
			}
			_ = held.Release(ctx)
			if r := testkit.Recv(t, first, 30*time.Second, "the first request"); r.status != http.StatusOK {
				t.Errorf("the first request: %d %q %v", r.status, r.body, r.err)
			}
		})
	}
}
