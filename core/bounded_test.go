package core_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Flood sizes. Every key is used once, by one path; the paths run on
// floodWorkers goroutines at a time (plus one waiter each where a path
// queues one), so what the engine holds at once stays small while the
// number of keys it has seen grows past ten thousand.
const (
	floodPerPath   = 1_500 // keys per path; 7 paths
	floodWorkers   = 32    // paths run at once (Redlock: fewer); more gains nothing on 2 cores
	floodLostBatch = 500   // leases held at once by the lost-lease path
)

// boundedHeapTolerance is how much the live heap (HeapAlloc after two GCs)
// may grow across a flood that follows a first one (see checkBounded).
// Measured under -race, a second flood grows it by 0–300 KiB: the engine's
// maps and renewal heap keep the arrays of their peak size, and a flood
// can still reach a new high-water mark now and then. A queue entry left
// behind per key costs about 300 bytes (entry, wake channel, key), so
// 10,500 of them (over 3 MiB) fail this on their own, and so does any
// state of 100 bytes per key; a leaked subscription is smaller, and the
// table sizes catch it first.
const boundedHeapTolerance = 1 << 20

// signalKey carries, in an acquire's context, a channel poked on every
// contended attempt of that acquire (see signaller).
type signalKey struct{}

// signaller tells a test that an acquire met the lock held: after one
// signal a waiter is queued behind a local holder (attempt 0) or was
// refused once; after two, a head waiter was refused again after its
// subscription was confirmed, so it waits for the release message.
type signaller struct{ core.NopObserver }

func (signaller) Contended(ctx context.Context, _ core.AcquireInfo, _ core.Holder, _ int) {
	if ch, ok := ctx.Value(signalKey{}).(chan struct{}); ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// flood drives one Client (c) through every path a request can take, with
// a second Client (other) standing for another process that holds locks.
type flood struct {
	c, other *core.Client
	rdbs     []*redis.Client // every node, for DEL, as an operator or a failover would
	// pools are the go-redis clients under c and other: the warm-up fills
	// their connection pools, whose buffers (64 KiB a connection) are
	// bounded by the pool size, not by the keys seen.
	pools   []*redis.Client
	ctx     context.Context
	workers int // paths run at once
}

const floodWait = 10 * time.Second // loose bound on any one signal or result

// signalled returns ctx carrying a fresh signal channel.
func signalled(ctx context.Context) (context.Context, chan struct{}) {
	ch := make(chan struct{}, 4)
	return context.WithValue(ctx, signalKey{}, ch), ch
}

func (f *flood) signals(ch chan struct{}, n int, what string) error {
	for range n {
		select {
		case <-ch:
		case <-time.After(floodWait):
			return fmt.Errorf("no %s within %v", what, floodWait)
		}
	}
	return nil
}

func (f *flood) result(res <-chan acquired, what string) (acquired, error) {
	select {
	case r := <-res:
		return r, nil
	case <-time.After(floodWait):
		return acquired{}, fmt.Errorf("%s did not return within %v", what, floodWait)
	}
}

// cycle acquires key with acq and releases it.
func (f *flood) cycle(acq func() (*core.Lease, error), what string) error {
	l, err := acq()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := l.Release(f.ctx); err != nil {
		return fmt.Errorf("%s: release: %w", what, err)
	}
	return nil
}

// uncontended: Acquire, TryAcquire, NoWait and Do on a free lock.
func (f *flood) uncontended(key string) error {
	c, ctx := f.c, f.ctx
	if err := f.cycle(func() (*core.Lease, error) { return c.Acquire(ctx, key) }, "Acquire"); err != nil {
		return err
	}
	if err := f.cycle(func() (*core.Lease, error) { return c.TryAcquire(ctx, key) }, "TryAcquire"); err != nil {
		return err
	}
	if err := f.cycle(func() (*core.Lease, error) { return c.Acquire(ctx, key, core.NoWait()) }, "NoWait"); err != nil {
		return err
	}
	return c.Do(ctx, key, func(context.Context) error { return nil })
}

func wantNotAcquired(err error, timeout bool, what string) error {
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Timeout() != timeout {
		return fmt.Errorf("%s = %v, want ErrNotAcquired (timeout %v)", what, err, timeout)
	}
	return nil
}

// refused: TryAcquire and NoWait meet a holder of the other Client.
func (f *flood) refused(key string) error {
	lo, err := f.other.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	_, err1 := f.c.TryAcquire(f.ctx, key)
	_, err2 := f.c.Acquire(f.ctx, key, core.NoWait())
	if err := lo.Release(f.ctx); err != nil {
		return err
	}
	return errors.Join(wantNotAcquired(err1, false, "TryAcquire"), wantNotAcquired(err2, false, "NoWait"))
}

// waited: a head waiter subscribes, waits for the other Client's release
// message, and gets the lock.
func (f *flood) waited(key string) error {
	lo, err := f.other.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	wctx, sig := signalled(f.ctx)
	res := startWaiter(wctx, f.c, key)
	err = f.signals(sig, 2, "subscribed refusal")
	if rerr := lo.Release(f.ctx); err == nil {
		err = rerr
	}
	r, rerr := f.result(res, "waiter")
	switch {
	case rerr != nil:
		return rerr
	case r.err != nil:
		return fmt.Errorf("waiter: %w", r.err)
	}
	return errors.Join(err, r.l.Release(f.ctx))
}

// handedOff: a waiter queued behind a local holder; MaxWaiters(1) and NoWait
// are refused locally meanwhile; the release hands the lock straight to the
// waiter.
func (f *flood) handedOff(key string) error {
	l, err := f.c.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	wctx, sig := signalled(f.ctx)
	res := startWaiter(wctx, f.c, key)
	err = f.signals(sig, 1, "queued behind the local holder")
	if err == nil {
		_, err1 := f.c.Acquire(f.ctx, key, core.MaxWaiters(1))
		_, err2 := f.c.Acquire(f.ctx, key, core.NoWait())
		err = errors.Join(wantNotAcquired(err1, false, "MaxWaiters(1)"), wantNotAcquired(err2, false, "NoWait"))
	}
	if rerr := l.Release(f.ctx); rerr != nil {
		err = errors.Join(err, rerr)
	}
	r, rerr := f.result(res, "waiter")
	switch {
	case rerr != nil:
		return errors.Join(err, rerr)
	case r.err != nil:
		return errors.Join(err, fmt.Errorf("waiter: %w", r.err))
	}
	return errors.Join(err, r.l.Release(f.ctx))
}

// cancelled: a subscribed head waiter (the other Client holds), then a
// waiter queued behind a local holder, each cancelled while it waits.
func (f *flood) cancelled(key string) error {
	lo, err := f.other.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	err = f.cancelWaiter(key, 2)
	if rerr := lo.Release(f.ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		return err
	}
	l, err := f.c.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	err = f.cancelWaiter(key, 1)
	return errors.Join(err, l.Release(f.ctx))
}

func (f *flood) cancelWaiter(key string, signals int) error {
	sctx, sig := signalled(f.ctx)
	wctx, cancel := context.WithCancel(sctx)
	defer cancel()
	res := startWaiter(wctx, f.c, key)
	err := f.signals(sig, signals, "waiting")
	cancel()
	r, rerr := f.result(res, "cancelled waiter")
	switch {
	case rerr != nil:
		return errors.Join(err, rerr)
	case r.err == nil:
		return errors.Join(err, fmt.Errorf("cancelled waiter acquired"), r.l.Release(f.ctx))
	case !errors.Is(r.err, context.Canceled):
		return errors.Join(err, fmt.Errorf("cancelled waiter: %v, want context.Canceled", r.err))
	}
	return err
}

// budgetEnded: the wait budget runs out for a head waiter (the other Client
// holds) and for a waiter queued behind a local holder.
func (f *flood) budgetEnded(key string) error {
	const budget = 20 * time.Millisecond
	lo, err := f.other.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	_, err = f.c.Acquire(f.ctx, key, core.Wait(budget))
	if errors.Is(err, core.ErrUnavailable) {
		// Under load the budget can end the first attempt before Redis
		// answered it: nothing was seen held, so that is ErrUnavailable, and
		// the tables must empty all the same.
		err = nil
	} else {
		err = wantNotAcquired(err, true, "head waiter's Wait")
	}
	if rerr := lo.Release(f.ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		return err
	}
	l, err := f.c.Acquire(f.ctx, key)
	if err != nil {
		return err
	}
	_, err = f.c.Acquire(f.ctx, key, core.Wait(budget))
	return errors.Join(wantNotAcquired(err, true, "queued waiter's Wait"), l.Release(f.ctx))
}

// lost: leases whose keys are deleted on the server, each with a local
// waiter queued behind it, which gets the lock once the loss is noticed.
func (f *flood) lost(keys []string) error {
	leases := make([]*core.Lease, len(keys))
	if err := f.parallel(keys, func(i int, key string) (err error) {
		leases[i], err = f.c.Acquire(f.ctx, key, core.TTL(time.Second))
		return err
	}); err != nil {
		return err
	}
	waiters := make([]<-chan acquired, len(keys))
	if err := f.parallel(keys, func(i int, key string) error {
		wctx, sig := signalled(f.ctx)
		waiters[i] = startWaiter(wctx, f.c, key)
		return f.signals(sig, 1, "queued behind the doomed lease")
	}); err != nil {
		return err
	}
	for _, rdb := range f.rdbs {
		pipe := rdb.Pipeline()
		for _, k := range keys {
			pipe.Del(f.ctx, redisKey(k))
		}
		if _, err := pipe.Exec(f.ctx); err != nil {
			return err
		}
	}
	return f.parallel(keys, func(i int, key string) error {
		l := leases[i]
		select {
		case <-l.Done():
		case <-time.After(floodWait):
			return fmt.Errorf("lease %q not lost within %v of its key's deletion", key, floodWait)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, core.ErrLost) {
			return fmt.Errorf("lease %q ended with %v, want ErrLost", key, cause)
		}
		if err := l.Release(f.ctx); !errors.Is(err, core.ErrNotHeld) {
			return fmt.Errorf("release of a lost lease = %v, want ErrNotHeld", err)
		}
		r, err := f.result(waiters[i], "waiter behind a lost lease")
		switch {
		case err != nil:
			return err
		case r.err != nil:
			return fmt.Errorf("waiter behind a lost lease: %w", r.err)
		}
		return r.l.Release(f.ctx)
	})
}

// redisKey is key's lock hash under the default prefix (keys up to
// core.HashKeyLen bytes are stored verbatim).
func redisKey(key string) string { return core.DefaultPrefix + ":" + core.LayoutVersion + ":k:" + key }

// parallel runs fn on every item, f.workers at a time, and returns the
// first few failures.
func (f *flood) parallel(items []string, fn func(i int, item string) error) error {
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range min(f.workers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) {
					return
				}
				if err := fn(i, items[i]); err != nil {
					mu.Lock()
					if len(errs) < 5 {
						errs = append(errs, fmt.Errorf("%s: %w", items[i], err))
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run sends perPath fresh keys (named prefix:path:i) through every path.
func (f *flood) run(prefix string, perPath int) error {
	type path struct {
		name string
		fn   func(key string) error
	}
	paths := []path{
		{"uncontended", f.uncontended},
		{"refused", f.refused},
		{"waited", f.waited},
		{"handoff", f.handedOff},
		{"cancelled", f.cancelled},
		{"budget", f.budgetEnded},
	}
	var keys []string
	var fns []func(string) error
	for i := range perPath {
		for _, p := range paths {
			keys = append(keys, fmt.Sprintf("%s:%s:%d", prefix, p.name, i))
			fns = append(fns, p.fn)
		}
	}
	if err := f.parallel(keys, func(i int, key string) error { return fns[i](key) }); err != nil {
		return err
	}
	for start := 0; start < perPath; start += floodLostBatch {
		var lost []string
		for i := start; i < min(start+floodLostBatch, perPath); i++ {
			lost = append(lost, fmt.Sprintf("%s:lost:%d", prefix, i))
		}
		if err := f.lost(lost); err != nil {
			return err
		}
	}
	return nil
}

// Every per-key table of a Client empties again after a flood of distinct
// keys through every path a request can take (uncontended, refused by
// another Client's holder, waiting for a release message, local hand-off
// with MaxWaiters and NoWait refused locally, cancelled while queued, wait
// budget ended, lease lost with a waiter behind it), and the live heap
// does not grow with the number of keys seen.
func TestBoundedStateAfterFlood(t *testing.T) {
	srv := redistest.Start(t)
	rc, ro := srv.NewClient(), srv.NewClient()
	f := &flood{
		c:       newClientOn(t, rc, core.WithObserver(signaller{})),
		other:   newClientOn(t, ro),
		rdbs:    []*redis.Client{srv.Client},
		pools:   []*redis.Client{rc, ro},
		ctx:     testkit.Context(t, 2*time.Minute),
		workers: floodWorkers,
	}
	f.checkBounded(t, floodPerPath, boundedHeapTolerance)
}

// The same under Redlock, where every node has its own pub/sub hub and
// there is no direct hand-off; fewer keys (each call fans out to three
// nodes), so only the tables are checked, not the heap.
func TestBoundedStateAfterFloodRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	f := &flood{
		// Above the default 100ms, so a loaded test machine does not turn
		// the flood into ErrUnavailable; not far above, as it also bounds
		// the jitter Redlock adds to every wake-up.
		c:       newRedlock(t, srvs, core.WithObserver(signaller{}), core.WithNodeTimeout(300*time.Millisecond)),
		other:   newRedlock(t, srvs, core.WithNodeTimeout(300*time.Millisecond)),
		ctx:     testkit.Context(t, 2*time.Minute),
		workers: 16,
	}
	for _, s := range srvs {
		f.rdbs = append(f.rdbs, s.Client)
	}
	f.checkBounded(t, 50, -1)
}

// checkBounded warms f's Clients up, floods them with perPath keys per
// path, and checks that their tables return to the warm baseline and (for
// a tolerance ≥ 0) that the live heap grew by at most tolerance bytes.
func (f *flood) checkBounded(t *testing.T, perPath int, tolerance int64) {
	// Warm up: start the pub/sub hubs and renewal goroutines, fill the
	// connection pools, so the baseline already has what any use leaves.
	// Where the heap is checked, the warm-up is a whole flood of other
	// keys: what stays after the first flood in a process and never grows
	// again is a high-water mark, not state kept per key (the runtime's
	// descriptor of every goroutine ever alive at once, connections go-redis
	// dialled in the background), and it depends on how the flood's calls
	// happened to overlap. Measured from a flooded baseline, a second
	// flood's growth is only what it kept.
	warm := 20
	if tolerance >= 0 {
		warm = perPath
	}
	if err := f.run("warm", warm); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.pools {
		fillPool(t, f.ctx, p, f.rdbs[0])
	}
	clients := map[string]*core.Client{"flooded client": f.c, "other client": f.other}
	base := map[string]map[string]int{}
	for name, cl := range clients {
		waitTablesSettled(t, name, cl, nil)
		base[name] = testkit.Tables(cl)
	}
	goroutines := runtime.NumGoroutine()
	heapBefore := testkit.LiveHeap()

	start := time.Now()
	if err := f.run("flood", perPath); err != nil {
		t.Fatal(err)
	}
	t.Logf("flood of %d keys through 7 paths: %v", 7*perPath, time.Since(start).Round(time.Millisecond))

	for name, cl := range clients {
		waitTablesSettled(t, name, cl, base[name])
	}
	// Best-effort releases after a loss run in goroutines bounded by the
	// release timeout: wait for them too, so the heap holds none of them.
	testkit.WaitFor(t, 10*time.Second, "goroutines back to the baseline", func() bool {
		return runtime.NumGoroutine() <= goroutines
	})
	if tolerance < 0 {
		return
	}
	heapAfter := testkit.LiveHeap()
	growth := heapAfter - heapBefore
	t.Logf("live heap %d → %d bytes (%+d; tolerance %d)", heapBefore, heapAfter, growth, tolerance)
	if growth > tolerance {
		t.Fatalf("live heap grew by %d bytes over a flood of %d keys, tolerance %d", growth, 7*perPath, tolerance)
	}
}

// syncTables are emptied by the call that ends an entry's use (Acquire
// returning, Release, the loss of a lease) before anybody can see that
// call's result: right after the flood they must be at their baseline
// already, not eventually. (A lease left in the renewal heap, say, would
// otherwise be removed later by its next renewal finding it released,
// which polling would wait for and so hide.)
var syncTables = []string{"queues", "leases"}

// waitTablesSettled checks the syncTables of cl at once, then waits until
// every table has its baseline size (nil: all zero). Unsubscribes complete
// asynchronously (the server's confirmation removes the entry), and so do
// renewals handed to the I/O goroutine: hence the polling, with a loose
// bound.
func waitTablesSettled(t *testing.T, name string, cl *core.Client, base map[string]int) {
	t.Helper()
	last := testkit.Tables(cl)
	for _, k := range syncTables {
		if n := last[k]; n != base[k] {
			t.Fatalf("%s: table %q has %d entries once every call returned, want %d", name, k, n, base[k])
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		last = testkit.Tables(cl)
		settled := true
		for k, v := range last {
			if v != base[k] {
				settled = false
			}
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: tables %v did not return to %v within 10s", name, last, base)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A subscription whose UNSUBSCRIBE was written but never answered, because
// the connection broke first, is dropped once the break is noticed, not
// left until some other lock's subscribe happens to run the hub's writer.
func TestSubscriptionDroppedAfterUnansweredUnsubscribe(t *testing.T) {
	srv := redistest.Start(t)
	px, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	c := newClientOn(t, srv.NewClient(func(o *redis.Options) { o.Addr = px.Addr() }), core.WithObserver(signaller{}))
	other := newClient(t, srv)
	ctx := testkit.Context(t, 30*time.Second)

	lo, err := other.Acquire(ctx, "unsub:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Release(ctx)
	sctx, sig := signalled(ctx)
	wctx, cancel := context.WithCancel(sctx)
	defer cancel()
	res := startWaiter(wctx, c, "unsub:1")
	for range 2 { // refused, subscribed, refused again after the confirmation
		testkit.Recv(t, sig, 10*time.Second, "a contended attempt")
	}
	if n := testkit.Tables(c)["subscriptions"]; n != 1 {
		t.Fatalf("%d subscriptions while one waiter waits, want 1", n)
	}

	px.DropReplies(true)
	up := px.Stats().Upstream
	cancel()
	if r := testkit.Recv(t, res, 10*time.Second, "the cancelled waiter"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", r.err)
	}
	// Nothing else of c talks to Redis now: bytes upstream are the UNSUBSCRIBE.
	testkit.WaitFor(t, 10*time.Second, "the UNSUBSCRIBE written", func() bool { return px.Stats().Upstream > up })
	px.CutAll()
	px.DropReplies(false)
	testkit.WaitFor(t, 10*time.Second, "the subscription dropped", func() bool {
		return testkit.Tables(c)["subscriptions"] == 0
	})
}

// fillPool opens every connection rdb's pool may hold, as a burst of load
// would: PoolSize calls at once, each blocked in Redis on a key of its own
// until every connection is open, then let go by pusher.
func fillPool(t *testing.T, ctx context.Context, rdb, pusher *redis.Client) {
	t.Helper()
	n := rdb.Options().PoolSize
	var wg sync.WaitGroup
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprintf("bounded:fill:%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = rdb.BLPop(ctx, 30*time.Second, keys[i]).Err()
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "every connection of the pool open", func() bool {
		return int(rdb.PoolStats().TotalConns) >= n
	})
	for _, k := range keys {
		if err := pusher.LPush(ctx, k, "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
