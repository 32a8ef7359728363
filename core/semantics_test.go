package core_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

func TestReentrancy(t *testing.T) {
	srv := redistest.Start(t)
	cmds := &cmdCounter{}
	rdb := srv.NewClient()
	rdb.AddHook(cmds)
	c := newClientOn(t, rdb)
	ctx := testkit.Context(t, 10*time.Second)

	outer, err := c.Acquire(ctx, "r:1")
	if err != nil {
		t.Fatal(err)
	}
	// Without Reentrant: the context already holds the key.
	if _, err := c.Acquire(outer.Context(), "r:1"); !errors.Is(err, core.ErrWouldDeadlock) {
		t.Fatalf("nested acquire without Reentrant = %v, want ErrWouldDeadlock", err)
	}
	before := cmds.n.Load()
	inner, err := c.Acquire(outer.Context(), "r:1", core.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	inner2, err := c.Acquire(inner.Context(), "r:1", core.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	if n := cmds.n.Load() - before; n != 0 {
		t.Fatalf("nested acquires sent %d Redis commands", n)
	}
	if inner.Token() != outer.Token() || inner2.Token() != outer.Token() {
		t.Fatal("nested lease has another token")
	}
	if l, _ := core.LeaseFromContext(inner2.Context()); l != inner2 {
		t.Fatal("LeaseFromContext is not the innermost lease")
	}
	// Releasing a nested lease does not release the lock.
	if err := inner2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := c.Inspect(ctx, "r:1"); !held {
		t.Fatal("releasing a nested lease released the lock")
	}
	// A different key in the same context is an ordinary acquire.
	other, err := c.Acquire(outer.Context(), "r:2")
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Release(ctx)
	// Releasing the outer one ends the nested ones.
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inner.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("nested lease outlived its outer lease")
	}
	if !errors.Is(inner.Err(), core.ErrNotHeld) {
		t.Fatalf("nested Err = %v", inner.Err())
	}
	if err := inner.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("nested Release after outer release = %v", err)
	}
	// A released lease in the context no longer counts as held.
	l, err := c.Acquire(context.WithoutCancel(outer.Context()), "r:1")
	if err != nil {
		t.Fatalf("acquire with a released lease in ctx: %v", err)
	}
	_ = l.Release(ctx)
}

func TestTryAcquireHeldReturnsHolder(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	rec.meta = "traceparent=00-abc-def-01"
	holder := newClient(t, srv, core.WithOwner("svc-a:1"), core.WithObserver(rec))
	other := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	l, err := holder.Acquire(ctx, "t:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, err = other.TryAcquire(ctx, "t:1")
	var na *core.NotAcquiredError
	if !errors.Is(err, core.ErrNotAcquired) || !errors.As(err, &na) {
		t.Fatalf("TryAcquire on a held key = %v", err)
	}
	if na.Holder.Owner != "svc-a:1" || na.Holder.Metadata != rec.meta || na.Holder.Token != l.Token() {
		t.Fatalf("holder = %+v", na.Holder)
	}
	if na.Holder.TTL <= 0 || na.Holder.TTL > core.DefaultTTL || na.Timeout() {
		t.Fatalf("holder TTL %v timeout %v", na.Holder.TTL, na.Timeout())
	}
	// NoWait behaves the same through Acquire.
	if _, err := other.Acquire(ctx, "t:1", core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("NoWait = %v", err)
	}
	h, held, err := other.Inspect(ctx, "t:1")
	if err != nil || !held || h.Owner != "svc-a:1" || h.Metadata != rec.meta {
		t.Fatalf("Inspect = %+v %v %v", h, held, err)
	}
}

// The wait budget and the caller's context end a wait with different errors.
func TestWaitBudgetVersusContext(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := holder.Acquire(ctx, "w:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	start := time.Now()
	_, err = c.Acquire(ctx, "w:1", core.Wait(300*time.Millisecond))
	if took := time.Since(start); took < 300*time.Millisecond || took > 2300*time.Millisecond {
		t.Fatalf("a 300ms wait budget ended after %v", took)
	}
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || !na.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("budget end = %v, want a timeout NotAcquiredError", err)
	}
	if na.Holder.Owner != holder.Owner() {
		t.Fatalf("timeout error holder %+v", na.Holder)
	}

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(dctx, "w:1")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("ctx deadline = %v, want DeadlineExceeded", err)
	}

	cctx, ccancel := context.WithCancel(ctx)
	res := startWaiter(cctx, c, "w:1")
	testkit.WaitFor(t, 5*time.Second, "the waiter to wait", func() bool { _, n, _, _ := rec.snapshot(); return n >= 5 })
	ccancel()
	if r := testkit.Recv(t, res, 10*time.Second, "the cancelled waiter"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("ctx cancel = %v, want Canceled", r.err)
	}
	ends, _, _, _ := rec.snapshot()
	want := []core.Outcome{core.OutcomeTimeout, core.OutcomeDeadline, core.OutcomeCanceled}
	if len(ends) != len(want) {
		t.Fatalf("%d acquire ends", len(ends))
	}
	for i, o := range want {
		if ends[i].Outcome != o {
			t.Fatalf("end %d outcome %v, want %v", i, ends[i].Outcome, o)
		}
	}
}

func TestDo(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithTTL(time.Second))
	ctx := testkit.Context(t, 20*time.Second)
	boom := errors.New("boom")

	var ran bool
	err := c.Do(ctx, "do:1", func(ctx context.Context) error {
		l, ok := core.LeaseFromContext(ctx)
		ran = ok && l.Key() == "do:1"
		return boom
	})
	if !ran || !errors.Is(err, boom) || errors.Is(err, core.ErrLost) {
		t.Fatalf("Do = %v (ran %v)", err, ran)
	}
	if _, held, _ := c.Inspect(ctx, "do:1"); held {
		t.Fatal("Do left the lock held")
	}

	// Lost while fn runs: fn's context ends with cause ErrLost and Do joins it.
	err = c.Do(ctx, "do:1", func(fctx context.Context) error {
		if err := srv.Client.Del(ctx, "lockkit:v1:k:do:1").Err(); err != nil {
			return err
		}
		select {
		case <-fctx.Done():
		case <-time.After(10 * time.Second):
			return errors.New("fn context not cancelled after the key was deleted")
		}
		if !errors.Is(context.Cause(fctx), core.ErrLost) {
			return errors.New("fn context not cancelled with ErrLost")
		}
		return boom
	})
	if !errors.Is(err, boom) || !errors.Is(err, core.ErrLost) {
		t.Fatalf("Do with a lost lease = %v, want boom joined with ErrLost", err)
	}

	// A panicking fn still releases, and the panic goes on to the caller.
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = c.Do(ctx, "do:2", func(context.Context) error { panic("x") })
	}()
	if recovered != "x" {
		t.Fatalf("Do swallowed fn's panic (recovered %v)", recovered)
	}
	if _, held, _ := c.Inspect(ctx, "do:2"); held {
		t.Fatal("a panic in fn left the lock held")
	}
}

func TestNoRenew(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	other := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "job:dedupe", core.TTL(time.Second), core.NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	// A duplicate is refused while the TTL runs, and never renewed.
	if _, err := other.TryAcquire(ctx, "job:dedupe"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("duplicate = %v", err)
	}
	testkit.Recv(t, l.Done(), 10*time.Second, "the NoRenew lease's end at its TTL")
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
	if _, _, renewed, _ := rec.snapshot(); renewed != 0 {
		t.Fatalf("a NoRenew lease was renewed %d times", renewed)
	}
	l2, err := other.Acquire(ctx, "job:dedupe", core.Wait(5*time.Second))
	if err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	_ = l2.Release(ctx)
}

func TestMaxWaiters(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := holder.Acquire(ctx, "mw:1")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r1 := startWaiter(wctx, c, "mw:1", core.MaxWaiters(2))
	r2 := startWaiter(wctx, c, "mw:1", core.MaxWaiters(2))
	testkit.WaitFor(t, 5*time.Second, "two queued waiters", func() bool { return core.Queued(c, "mw:1") == 2 })
	_, err3 := c.Acquire(ctx, "mw:1", core.MaxWaiters(2), core.Wait(time.Minute))
	var na *core.NotAcquiredError
	if !errors.As(err3, &na) || na.Timeout() {
		t.Fatalf("third waiter = %v, want an immediate NotAcquiredError", err3)
	}
	_ = l.Release(ctx)
	// Either may be the head: release whichever holds, then the other gets it.
	for range 2 {
		var a acquired
		select {
		case a = <-r1:
		case a = <-r2:
		case <-time.After(10 * time.Second):
			t.Fatal("a queued waiter never acquired")
		}
		if a.err != nil {
			t.Fatalf("queued waiter: %v", a.err)
		}
		_ = a.l.Release(ctx)
	}
}

func TestForceRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithTTL(time.Second))
	op := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "stuck:1")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := op.ForceRelease(ctx, "stuck:1")
	if err != nil || !ok {
		t.Fatalf("ForceRelease = %v %v", ok, err)
	}
	testkit.Recv(t, l.Done(), 10*time.Second, "the holder learning at its next renewal")
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatal("holder not told of the forced release")
	}
	if ok, err := op.ForceRelease(ctx, "stuck:1"); err != nil || ok {
		t.Fatalf("ForceRelease of a free lock = %v %v", ok, err)
	}
	l2, err := op.TryAcquire(ctx, "stuck:1")
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("after ForceRelease: %v (token %d after %d)", err, l2.Token(), l.Token())
	}
	_ = l2.Release(ctx)
}

func TestClose(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	c, err := core.New(srv.NewClient(), core.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 20*time.Second)
	mine, err := c.Acquire(ctx, "close:1")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := holder.Acquire(ctx, "close:2")
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Release(ctx)
	res := startWaiter(ctx, c, "close:2")
	testkit.WaitFor(t, 5*time.Second, "the waiter waiting", func() bool { _, n, _, _ := rec.snapshot(); return n >= 2 })

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if r := testkit.Recv(t, res, 10*time.Second, "the waiter after Close"); !errors.Is(r.err, core.ErrClosed) {
		t.Fatalf("waiter after Close = %v", r.err)
	}
	testkit.Recv(t, mine.Done(), 10*time.Second, "the lease's end at Close")
	if !errors.Is(context.Cause(mine.Context()), core.ErrClosed) || !errors.Is(mine.Err(), core.ErrClosed) {
		t.Fatalf("lease after Close: cause %v err %v", context.Cause(mine.Context()), mine.Err())
	}
	if _, held, _ := holder.Inspect(ctx, "close:1"); held {
		t.Fatal("Close did not release the held lock")
	}
	if err := mine.Release(ctx); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Release after Close = %v", err)
	}
	if _, err := c.Acquire(ctx, "close:3"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close = %v", err)
	}
	// The Redis client is left open.
	if err := srv.Client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// Waiters of one Client queue locally (FIFO) and only the head talks to
// Redis: a hand-off costs a constant number of commands, not one per waiter.
func TestLocalQueueFIFO(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	cmds := &cmdCounter{}
	rdb := srv.NewClient()
	rdb.AddHook(cmds)
	c := newClientOn(t, rdb)
	ctx := testkit.Context(t, 30*time.Second)

	l, err := holder.Acquire(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, "hot")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			_ = l.Release(ctx)
		}()
		// enqueue in a known order: wait until this one is queued
		testkit.WaitFor(t, 5*time.Second, "queued", func() bool { return core.Queued(c, "hot") == i+1 })
	}
	before := cmds.n.Load()
	_ = l.Release(ctx)
	wg.Wait()
	used := cmds.n.Load() - before
	for i, v := range order {
		if v != i {
			t.Fatalf("not FIFO: %v", order)
		}
	}
	// Per hand-off: one acquire and one release script (plus the head's
	// wake-up attempt once); one per waiter per hand-off would be ~n²/2.
	if used > 2*n+4 {
		t.Fatalf("%d Redis commands for %d hand-offs", used, n)
	}
	t.Logf("%d commands for %d hand-offs", used, n)
}

type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
