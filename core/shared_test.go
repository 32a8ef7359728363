package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// kindRecorder keeps the kind and attempts of every acquire.
type kindRecorder struct {
	core.NopObserver
	mu    sync.Mutex
	kinds []string
	limit []int
	ends  []core.AcquireResult
	lease []string
}

func (r *kindRecorder) AcquireStart(ctx context.Context, a core.AcquireInfo) context.Context {
	r.mu.Lock()
	r.kinds = append(r.kinds, a.Kind)
	r.limit = append(r.limit, a.Limit)
	r.mu.Unlock()
	return ctx
}

func (r *kindRecorder) AcquireEnd(ctx context.Context, _ core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	r.ends = append(r.ends, res)
	r.mu.Unlock()
	return ctx
}

func (r *kindRecorder) Released(_ context.Context, l core.LeaseInfo, _ error) {
	r.mu.Lock()
	r.lease = append(r.lease, l.Kind)
	r.mu.Unlock()
}

// TestSemaphoreAdmitsN: n holders at once (a barrier proves they hold
// together), the n+1th refused with OutcomeLimited naming a holder, and
// under contention from several Clients never more than n inside (an
// overlap counter), with every grant's token larger than the last.
func TestSemaphoreAdmitsN(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	const n = 3
	clients := []*core.Client{newClient(t, srv), newClient(t, srv), newClient(t, srv)}

	// n holders together.
	var held []*core.Lease
	for i := range n {
		l, err := clients[i].Semaphore("exports:t1", n).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	_, err := clients[0].Semaphore("exports:t1", n).Acquire(ctx, core.NoWait())
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Limit != n || na.Holder.Owner == "" || na.Holder.TTL <= 0 {
		t.Fatalf("n+1th permit: %v (%+v)", err, na)
	}
	if o := core.Classify(ctx, err); o != core.OutcomeLimited || !o.NotAcquired() {
		t.Fatalf("Classify = %v, want limited", o)
	}
	if !strings.Contains(err.Error(), "all 3 permits") {
		t.Fatalf("error %q does not say the limit", err)
	}
	// A mutex and a read/write lock of the same key are other locks.
	if l, err := clients[0].TryAcquire(ctx, "exports:t1"); err != nil {
		t.Fatalf("mutex of the same key: %v", err)
	} else {
		_ = l.Release(ctx)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Contention: 3 Clients × 4 workers, each 25 permits.
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for _, c := range clients {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem := c.Semaphore("exports:t1", n)
				for range 25 {
					l, err := sem.Acquire(ctx, core.TTL(2*time.Second))
					if err != nil {
						errs <- err
						return
					}
					v := inside.Add(1)
					for m := maxInside.Load(); v > m && !maxInside.CompareAndSwap(m, v); m = maxInside.Load() {
					}
					time.Sleep(time.Millisecond) // the work under the permit
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxInside.Load(); m > n {
		t.Fatalf("%d holders inside at once, limit %d", m, n)
	}

	// Tokens order grants.
	sem := clients[0].Semaphore("exports:t1", n)
	var last int64
	for range 5 {
		l, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d after %d", l.Token(), last)
		}
		last = l.Token()
		_ = l.Release(ctx)
	}
}

// TestSemaphoreWaiterWokenByRelease: a waiter on a full semaphore whose
// holder has a long TTL acquires when the holder releases, by the release
// message, not by a timer: two attempts (refused, then after the wake-up),
// plus at most one for the subscription's confirmation.
func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	holder := newClient(t, srv)
	rec := &kindRecorder{}
	waiter := newClient(t, srv, core.WithObserver(rec))

	l, err := holder.Semaphore("s", 1).Acquire(ctx, core.TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *core.Lease, 1)
	go func() {
		wl, err := waiter.Semaphore("s", 1).Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- wl
	}()
	testkit.WaitFor(t, 10*time.Second, "the waiter subscribed", func() bool {
		n, _ := srv.NewClient().PubSubNumSub(ctx, "lockkit:v1:c:sk:s").Result()
		return n["lockkit:v1:c:sk:s"] == 1
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wl := testkit.Recv(t, got, 10*time.Second, "the waiter's permit")
	if wl == nil {
		t.FailNow()
	}
	defer wl.Release(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if a := rec.ends[0].Attempts; a < 2 || a > 3 {
		t.Fatalf("waiter made %d attempts, want 2 or 3", a)
	}
	if rec.kinds[0] != core.KindSemaphore || rec.limit[0] != 1 {
		t.Fatalf("AcquireInfo kind %q limit %d", rec.kinds[0], rec.limit[0])
	}
}

// TestSemaphoreCrashedHolderFreesByExpiry: a holder that stops renewing
// (NoRenew stands for a crashed process) frees its permit at its TTL.
func TestSemaphoreCrashedHolderFreesByExpiry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	dead := newClient(t, srv)
	for range 2 {
		if _, err := dead.Semaphore("s", 2).Acquire(ctx, core.NoRenew(), core.TTL(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	live := newClient(t, srv)
	if _, err := live.Semaphore("s", 2).TryAcquire(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("both permits held: %v", err)
	}
	l, err := live.Semaphore("s", 2).Acquire(ctx, core.Wait(10*time.Second))
	if err != nil {
		t.Fatalf("a permit of an expired holder did not free: %v", err)
	}
	l2, err := live.Semaphore("s", 2).Acquire(ctx, core.Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	_ = l2.Release(ctx)
}

// TestSemaphoreChangeN: an attempt is admitted when fewer than its own n
// permits are held: raising n admits more at once, lowering it admits
// nobody until the excess released; no holder is revoked.
func TestSemaphoreChangeN(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	a, err := c.Semaphore("s", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Semaphore("s", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("raised to 2: %v", err)
	}
	if _, err := c.Semaphore("s", 2).TryAcquire(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("third with n=2: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Semaphore("s", 1).TryAcquire(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("n=1 with one held: %v", err)
	}
	if b.Err() != nil {
		t.Fatalf("a holder was revoked: %v", b.Err())
	}
	_ = b.Release(ctx)
}

// TestSemaphorePermitLost: a permit removed on the server is found gone by
// the next renewal: the lease's Context ends with ErrLost and Release says
// so; a second Release is ErrNotHeld.
func TestSemaphorePermitLost(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	l, err := c.Semaphore("s", 2).Acquire(ctx, core.TTL(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.NewClient().Del(ctx, "lockkit:v1:sk:s").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrNotHeld) || !errors.Is(err, core.ErrLost) {
		t.Fatalf("Release after loss: %v", err)
	}
}

// TestSemaphoreRenewedPastTTL: a holder working longer than its TTL keeps
// its permit (renewal), so a second caller of n=1 stays out.
func TestSemaphoreRenewedPastTTL(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	l, err := c.Semaphore("s", 1).Acquire(ctx, core.TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	other := newClient(t, srv)
	deadline := time.Now().Add(time.Second) // three TTLs
	for time.Now().Before(deadline) {
		if ol, err := other.Semaphore("s", 1).TryAcquire(ctx); err == nil {
			_ = ol.Release(ctx)
			t.Fatal("a second permit of 1 while the first was renewed")
		}
		time.Sleep(50 * time.Millisecond) // pacing of the probe, not synchronisation
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("renewed permit: %v", err)
	}
}

// TestRWLockReadersShareWritersExclude: readers hold together (barrier), a
// writer is refused while they hold and names one; under contention of
// readers and writers from two Clients no writer overlaps anyone.
func TestRWLockReadersShareWritersExclude(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	rec := &kindRecorder{}
	a, b := newClient(t, srv, core.WithObserver(rec)), newClient(t, srv)
	r1, err := a.RWLock("doc").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.RWLock("doc").RLock(ctx, core.NoWait())
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	_, err = b.RWLock("doc").TryLock(ctx)
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Holder.Owner != a.Owner() && na.Holder.Owner != b.Owner() {
		t.Fatalf("writer while read: %v", err)
	}
	if core.Classify(ctx, err) != core.OutcomeContended {
		t.Fatalf("writer refused: %v", core.Classify(ctx, err))
	}
	// The refused TryLock left no mark: a third reader is admitted.
	r3, err := a.RWLock("doc").TryRLock(ctx)
	if err != nil {
		t.Fatalf("reader after a refused TryLock: %v", err)
	}
	for _, l := range []*core.Lease{r1, r2, r3} {
		_ = l.Release(ctx)
	}
	rec.mu.Lock()
	if rec.kinds[0] != core.KindRead || rec.lease[0] != core.KindRead {
		t.Fatalf("kinds %v / %v", rec.kinds, rec.lease)
	}
	rec.mu.Unlock()

	var readers, writers atomic.Int32
	var bad atomic.Value
	var wg sync.WaitGroup
	for i, c := range []*core.Client{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := c.RWLock("doc")
			for j := range 20 {
				write := (i+j)%3 == 0
				var l *core.Lease
				var err error
				if write {
					l, err = rw.Lock(ctx)
				} else {
					l, err = rw.RLock(ctx)
				}
				if err != nil {
					bad.Store(err.Error())
					return
				}
				if write {
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						bad.Store("a writer overlapped another holder")
					}
					time.Sleep(time.Millisecond)
					writers.Add(-1)
				} else {
					readers.Add(1)
					if writers.Load() != 0 {
						bad.Store("a reader overlapped a writer")
					}
					time.Sleep(time.Millisecond)
					readers.Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					bad.Store(err.Error())
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
}

// TestRWLockWriterNotStarved: under a continuous stream of overlapping
// readers a writer acquires, and no reader that started after the writer
// was first refused is admitted ahead of it (its token would be smaller
// than the writer's).
func TestRWLockWriterNotStarved(t *testing.T) { notStarved(t, false) }

// TestRWLockReaderNotStarved: the same with the roles swapped: a reader
// under a continuous stream of writers acquires, ahead of every writer
// that came after it.
func TestRWLockReaderNotStarved(t *testing.T) { notStarved(t, true) }

func notStarved(t *testing.T, reader bool) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	streamC := newClient(t, srv)
	rec := &firstContended{}
	waiterC := newClient(t, srv, core.WithObserver(rec))
	const hold = 30 * time.Millisecond
	take := func(c *core.Client, read bool, opts ...core.AcquireOption) (*core.Lease, error) {
		if read {
			return c.RWLock("doc").RLock(ctx, opts...)
		}
		return c.RWLock("doc").Lock(ctx, opts...)
	}

	type grant struct {
		start time.Time
		fence int64
	}
	var mu sync.Mutex
	var grants []grant
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * hold / 4) // staggered: the stream never pauses
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				l, err := take(streamC, !reader)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				grants = append(grants, grant{start, l.Token()})
				mu.Unlock()
				time.Sleep(hold) // the stream's work
				_ = l.Release(ctx)
			}
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "the stream flowing", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(grants) >= 8
	})
	asked := time.Now()
	w, err := take(waiterC, reader, core.Wait(5*time.Second))
	waited := time.Since(asked)
	close(stop)
	if err != nil {
		wg.Wait()
		t.Fatalf("starved by the stream: %v", err)
	}
	// Within the holds in flight (30ms each) plus a hand-off: a loose bound
	// on a loaded machine, far below the 5s a starved waiter would take.
	if waited > 2*time.Second {
		t.Errorf("waited %v behind a stream of %v holds", waited, hold)
	}
	wfence := w.Token()
	_ = w.Release(ctx)
	wg.Wait()
	first := rec.first()
	if first.IsZero() {
		if reader {
			return // a reader may find a gap between two writers at once
		}
		t.Fatal("the writer was never refused: the readers were not streaming")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range grants {
		if g.start.After(first) && g.fence < wfence {
			t.Fatalf("the stream's acquire that started %v after the waiter queued was admitted ahead of it", g.start.Sub(first))
		}
	}
}

// firstContended records when an acquire was first refused.
type firstContended struct {
	core.NopObserver
	mu sync.Mutex
	at time.Time
}

func (f *firstContended) Contended(context.Context, core.AcquireInfo, core.Holder, int) {
	f.mu.Lock()
	if f.at.IsZero() {
		f.at = time.Now()
	}
	f.mu.Unlock()
}

func (f *firstContended) first() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// TestRWLockWriterGivingUpLetsReadersIn: a writer whose budget ends drops
// its mark at once; readers are not held back for the mark's lifetime.
func TestRWLockWriterGivingUpLetsReadersIn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	r, err := c.RWLock("doc").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWLock("doc").Lock(ctx, core.Wait(200*time.Millisecond)); core.Classify(ctx, err) != core.OutcomeTimeout {
		t.Fatalf("writer behind a reader: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the mark dropped", func() bool {
		l, err := c.RWLock("doc").TryRLock(ctx)
		if err != nil {
			return false
		}
		_ = l.Release(ctx)
		return true
	})
	_ = r.Release(ctx)
}

func TestSharedBadInput(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 10*time.Second)
	c := newClient(t, srv)
	for _, n := range []int{0, -1, core.MaxPermits + 1} {
		if _, err := c.Semaphore("s", n).Acquire(ctx); !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("n=%d: %v", n, err)
		}
	}
	if _, err := c.Semaphore("", 1).Acquire(ctx); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := c.RWLock(strings.Repeat("k", core.MaxKeyLen+1)).RLock(ctx); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("oversized key: %v", err)
	}
	// A request does not take the same shared lock twice.
	l, err := c.RWLock("doc").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWLock("doc").Lock(l.Context()); !errors.Is(err, core.ErrWouldDeadlock) {
		t.Errorf("write inside read: %v", err)
	}
	_ = l.Release(ctx)
	// A long key is stored under its hash, like a mutex's.
	long := strings.Repeat("x", 300)
	sl, err := c.Semaphore(long, 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := srv.NewClient().Keys(ctx, "lockkit:v1:sh:*").Result()
	if len(keys) != 1 {
		t.Errorf("long semaphore key stored as %v", keys)
	}
	_ = sl.Release(ctx)
	if err := sl.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("double release: %v", err)
	}
}

func TestSharedUnsupportedOnRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	ctx := testkit.Context(t, 10*time.Second)
	var nodes []*redis.Client
	for _, s := range srvs {
		nodes = append(nodes, s.NewClient())
	}
	c, err := core.NewRedlock(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Semaphore("s", 2).Acquire(ctx); !errors.Is(err, core.ErrUnsupported) || core.Classify(ctx, err) != core.OutcomeMisconfigured {
		t.Fatalf("semaphore on Redlock: %v", err)
	}
	if _, err := c.RWLock("d").RLock(ctx); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("rwlock on Redlock: %v", err)
	}
}

// TestSharedLocksAndTables: Client.Locks lists held permits and a shared
// lock's waiters with their kind, and the local queues (one per key, as a
// mutex's) empty once nobody waits or holds (a client choosing many
// distinct keys cannot grow them).
func TestSharedLocksAndTables(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	held, err := c.Semaphore("exports", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 8)
	heldOthers := map[int]*core.Lease{}
	for i := range 8 { // 4 waiters on one key, 1 on each of 4 others
		key := "exports"
		if i >= 4 {
			key = fmt.Sprint("other-", i)
			l, err := c.Semaphore(key, 1).Acquire(ctx) // full
			if err != nil {
				t.Fatal(err)
			}
			heldOthers[i] = l
		}
		go func() {
			_, err := c.Semaphore(key, 1).Acquire(wctx)
			done <- err
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "8 waiters", func() bool { return testkit.Tables(c)["waiters"] == 8 })
	if n := testkit.Tables(c)["queues"]; n != 5 {
		t.Errorf("%d local queues, want 5 keys", n)
	}
	var saw bool
	for _, s := range c.Locks() {
		if s.Key == "exports" && s.Kind == core.KindSemaphore && s.Held && s.Waiters == 4 && !s.OldestWait.IsZero() {
			saw = true
		}
	}
	if !saw {
		t.Errorf("Locks does not show the held permit with its 4 waiters: %+v", c.Locks())
	}
	cancel()
	for range 8 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("waiter: %v", err)
		}
	}
	if tb := testkit.Tables(c); tb["queues"] != 5 || tb["waiters"] != 0 {
		t.Errorf("tables after the waits ended: %v, want the 5 queues of the permits held and no waiter", tb)
	}
	// The hub unsubscribes on its own goroutine.
	testkit.WaitFor(t, 10*time.Second, "no subscription left", func() bool { return testkit.Tables(c)["subscriptions"] == 0 })
	_ = held.Release(ctx)
	for i := 4; i < 8; i++ {
		if l, ok := heldOthers[i]; ok {
			_ = l.Release(ctx)
		}
	}
	if n := testkit.Tables(c)["queues"]; n != 0 {
		t.Errorf("%d local queues after every permit was released, want 0", n)
	}
}

// TestSemaphoreFIFO: when a permit frees, the waiter that has waited
// longest gets it, even in another process and even when the other waiter
// is woken by the same release (five times in a row: without the order
// each would be a coin toss).
func TestSemaphoreFIFO(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	holder := newClient(t, srv)
	r1, r2 := newRecorder(), newRecorder()
	first, second := newClient(t, srv, core.WithObserver(r1)), newClient(t, srv, core.WithObserver(r2))
	for round := range 5 {
		h, err := holder.Semaphore("fifo", 1).Acquire(ctx, core.TTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		type got struct {
			who string
			l   *core.Lease
			err error
		}
		done := make(chan got, 2)
		wait := func(who string, c *core.Client, rec *recorder) {
			before := func() int { _, n, _, _ := rec.snapshot(); return n }()
			go func() {
				l, err := c.Semaphore("fifo", 1).Acquire(ctx)
				done <- got{who, l, err}
			}()
			testkit.WaitFor(t, 10*time.Second, who+" refused", func() bool { _, n, _, _ := rec.snapshot(); return n > before })
		}
		wait("first", first, r1)
		wait("second", second, r2)
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		g := testkit.Recv(t, done, 10*time.Second, "a waiter's permit")
		if g.err != nil || g.who != "first" {
			t.Fatalf("round %d: %s got the permit first (%v), want the one waiting longest", round, g.who, g.err)
		}
		_ = g.l.Release(ctx)
		g = testkit.Recv(t, done, 10*time.Second, "the second waiter's permit")
		if g.err != nil {
			t.Fatal(g.err)
		}
		_ = g.l.Release(ctx)
	}
}
