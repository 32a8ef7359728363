package exampletest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
	"github.com/lockkit/lockkit/internal/redistest"
)

// Router checks an HTTP front end's NewRouter (ordersgin, ordersecho) on a
// real redis-server, for what its Config decides and the examples' own
// tests do not reach: the whole service (OrdersService); while another
// replica holds the order, GET answers (no lock), ship answers 409 at once
// (one no-wait attempt, seen by the Observer), pay waits for the holder
// (its contended attempt awaited, then the holder releases) and writes with
// a newer token; with Config.Wait set, pay and a transfer give up after
// that budget with 409 and Retry-After (the transfer keeping nothing), an
// export with every permit held with 429, a settings write beside a reader
// with 409 while a read shares; with NoLock, pay writes under a lock held
// elsewhere, with token 0.
func Router(t *testing.T, newRouter func(ordershttp.Config) http.Handler) {
	RouterServed(t, func(t *testing.T, cfg ordershttp.Config) string { return serveRouter(t, newRouter(cfg)) })
}

// RouterServed is Router for a front end that is not an http.Handler
// (ordersfiber): serve serves the front end of cfg on loopback until t
// ends and returns its base URL.
func RouterServed(t *testing.T, serve func(*testing.T, ordershttp.Config) string) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	other := newClient(t, srv, core.NopObserver{}) // another replica
	hold := func(t *testing.T, key string) *core.Lease {
		t.Helper()
		l, err := other.Acquire(ctx, key)
		if err != nil {
			t.Fatalf("hold %s: %v", key, err)
		}
		return l
	}

	t.Run("service", func(t *testing.T) {
		c := newClient(t, srv, core.NopObserver{})
		OrdersService(t, serve(t, ordershttp.Config{Client: c, Book: orders.NewStore(5 * time.Millisecond)}))
	})

	t.Run("held elsewhere", func(t *testing.T) {
		obs := newAcquireLog()
		base := serve(t, ordershttp.Config{Client: newClient(t, srv, obs), Book: orders.NewStore(0)})
		held := hold(t, "order:x")
		if r := get(t, base+"/orders/x"); r != http.StatusOK {
			t.Errorf("GET under a held lock: %d", r)
		}
		if r := Post(t, base+"/orders/x/ship"); r.Status != http.StatusConflict || r.RetryAfter == "" {
			t.Errorf("ship while held: %d %q %s", r.Status, r.RetryAfter, r.Body)
		}
		if e := obs.last(); e.info.Key != "order:x" || e.info.Strategy != "nowait" || e.res.Outcome != core.OutcomeContended {
			t.Errorf("ship's acquire: %+v", e)
		}
		obs.drain()
		paid := make(chan Result, 1)
		go func() { paid <- Post(t, base+"/orders/x/pay") }()
		obs.awaitContended(t, "order:x") // pay found the lock held and waits
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-paid
		if tok, _ := strconv.ParseInt(r.Token, 10, 64); r.Status != http.StatusOK || tok <= held.Token() || r.Order.Token != tok || r.Order.Payments != 1 {
			t.Errorf("pay after the holder released (its token %d): %d token %q %+v %s", held.Token(), r.Status, r.Token, r.Order, r.Body)
		}
	})

	t.Run("wait budget", func(t *testing.T) {
		const wait = 300 * time.Millisecond
		obs := newAcquireLog()
		base := serve(t, ordershttp.Config{Client: newClient(t, srv, obs), Book: orders.NewStore(0), Wait: wait})
		held := hold(t, "order:y")
		if r := Post(t, base+"/orders/y/pay"); r.Status != http.StatusConflict || r.RetryAfter == "" {
			t.Errorf("pay while held: %d %q %s", r.Status, r.RetryAfter, r.Body)
		}
		if e := obs.last(); e.info.Key != "order:y" || e.info.Wait != wait || e.res.Outcome != core.OutcomeTimeout {
			t.Errorf("pay's acquire: %+v", e)
		}
		// A transfer into the held order gives up too, and keeps nothing
		// of the other order.
		if r := Post(t, base+"/orders/z/transfer/y"); r.Status != http.StatusConflict || r.RetryAfter == "" {
			t.Errorf("transfer into a held order: %d %q %s", r.Status, r.RetryAfter, r.Body)
		}
		if _, h, err := other.Inspect(ctx, "order:z"); err != nil || h {
			t.Errorf("order:z held after the transfer gave up: %v %v", h, err)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}

		// Exports: ExportLimit at once per tenant, 429 past the budget.
		acme := []string{ordershttp.TenantHeader, "acme"}
		var permits []*core.Lease
		for range ordershttp.ExportLimit {
			l, err := other.Semaphore("export:acme", ordershttp.ExportLimit).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			permits = append(permits, l)
		}
		if r := Post(t, base+"/tenant/export", acme...); r.Status != http.StatusTooManyRequests || r.RetryAfter == "" {
			t.Errorf("export with every permit held: %d %q %s", r.Status, r.RetryAfter, r.Body)
		}
		if e := obs.last(); e.info.Key != "export:acme" || e.info.Kind != core.KindSemaphore || e.res.Outcome != core.OutcomeLimited {
			t.Errorf("export's acquire: %+v", e)
		}
		_ = permits[0].Release(ctx)
		if r := Post(t, base+"/tenant/export", acme...); r.Status != http.StatusOK {
			t.Errorf("export with a permit free: %d %s", r.Status, r.Body)
		}
		_ = permits[1].Release(ctx)

		// Settings: reads share with a reader elsewhere, wait for a writer.
		rl, err := other.RWLock("settings:acme").RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := do(t, http.MethodGet, base+"/tenant/settings", acme...); r != http.StatusOK {
			t.Errorf("settings read beside a reader: %d", r)
		}
		if r := do(t, http.MethodPut, base+"/tenant/settings?plan=pro", acme...); r != http.StatusConflict {
			t.Errorf("settings write beside a reader: %d", r)
		}
		_ = rl.Release(ctx)
		if r := do(t, http.MethodPut, base+"/tenant/settings?plan=pro", acme...); r != http.StatusOK {
			t.Errorf("settings write alone: %d", r)
		}
	})

	// The handler writes the order it locked: /orders/%34%32/pay locks
	// order:42 (the adapters decode an id once) and must pay order 42, not
	// an order named "%34%32" that nothing locks.
	t.Run("escaped id", func(t *testing.T) {
		obs := newAcquireLog()
		base := serve(t, ordershttp.Config{Client: newClient(t, srv, obs), Book: orders.NewStore(0)})
		r := Post(t, base+"/orders/%34%32/pay")
		if e := obs.last(); r.Status != http.StatusOK || r.Order.ID != "42" || e.info.Key != "order:42" {
			t.Errorf("pay /orders/%%34%%32: %d, paid order %q under the lock %q: %s", r.Status, r.Order.ID, e.info.Key, r.Body)
		}
	})

	t.Run("nolock", func(t *testing.T) {
		base := serve(t, ordershttp.Config{Book: orders.NewStore(0), NoLock: true})
		held := hold(t, "order:z")
		defer func() { _ = held.Release(ctx) }()
		if r := Post(t, base+"/orders/z/pay"); r.Status != http.StatusOK || r.Token != "" || r.Order.Token != 0 || r.Order.Payments != 1 {
			t.Errorf("pay without the lock, order:z held elsewhere: %d token %q %+v %s", r.Status, r.Token, r.Order, r.Body)
		}
	})
}

// serveRouter serves h on loopback until the test ends and returns its URL.
func serveRouter(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return hs.URL
}

// newClient is a lock client of its own on srv, as another replica has,
// closed when the test ends.
func newClient(t *testing.T, srv *redistest.Server, obs core.Observer) *core.Client {
	c, err := core.New(srv.NewClient(), core.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func get(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// acquireLog is an Observer that keeps each acquire's end and signals
// each attempt that found the lock held (never blocking the engine).
type acquireLog struct {
	core.NopObserver
	contended chan string // the key

	mu   sync.Mutex
	ends []acquireEnd
}

type acquireEnd struct {
	info core.AcquireInfo
	res  core.AcquireResult
}

func newAcquireLog() *acquireLog { return &acquireLog{contended: make(chan string, 64)} }

func (l *acquireLog) Contended(_ context.Context, a core.AcquireInfo, _ core.Holder, _ int) {
	select {
	case l.contended <- a.Key:
	default:
	}
}

func (l *acquireLog) AcquireEnd(ctx context.Context, a core.AcquireInfo, r core.AcquireResult) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends = append(l.ends, acquireEnd{a, r})
	return ctx
}

// last is the latest acquire's end: a middleware's acquire ends before
// its answer is sent, so after a response it is that request's.
func (l *acquireLog) last() acquireEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ends) == 0 {
		return acquireEnd{}
	}
	return l.ends[len(l.ends)-1]
}

// drain forgets the contended attempts signalled so far.
func (l *acquireLog) drain() {
	for {
		select {
		case <-l.contended:
		default:
			return
		}
	}
}

// awaitContended waits (at most 10s) for an attempt on key to find it held.
func (l *acquireLog) awaitContended(t *testing.T, key string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case k := <-l.contended:
			if k == key {
				return
			}
		case <-timeout:
			t.Fatalf("no contended attempt on %s", key)
		}
	}
}

// do sends a request without a body with header name/value pairs and
// returns its status.
func do(t *testing.T, method, url string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
