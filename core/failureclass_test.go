package core_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// These tests freeze redis-server (SIGSTOP) and give acquires a wait budget
// shorter than the go-redis I/O timeout, itself shorter than the caller's
// context: the budget is what cuts the call. A Redis that stops answering
// must read as ErrUnavailable, never as contention, unless the lock was
// seen held during the wait.

// ioTimeout sets the go-redis read and write timeouts.
func ioTimeout(d time.Duration) func(*redis.Options) {
	return func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = d, d }
}

// acquireSends announces every acquire script a client sends, with its
// time (note, as a testkit.EachCommand hook): an EVAL/EVALSHA on a lock key
// without a channel argument (the release script names the notification
// channel, lockkit:v1:c:...).
type acquireSends struct{ ch chan time.Time }

func newAcquireSends() *acquireSends { return &acquireSends{ch: make(chan time.Time, 64)} }

func (h *acquireSends) note(cmd redis.Cmder) {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return
	}
	var lockKey, channel bool
	for _, a := range cmd.Args() {
		s, _ := a.(string)
		lockKey = lockKey || strings.Contains(s, ":v1:k:")
		channel = channel || strings.Contains(s, ":v1:c:")
	}
	if lockKey && !channel {
		select {
		case h.ch <- time.Now():
		default:
		}
	}
}

// wantUnavailable asserts err is the ErrUnavailable of a wait budget that
// ended with no answer from Redis: not contention, not the caller's context.
func wantUnavailable(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	var ue *core.UnavailableError
	switch {
	case !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &ue):
		t.Errorf("%s = %v, want ErrUnavailable", what, err)
	case errors.Is(err, core.ErrNotAcquired):
		t.Errorf("%s = %v: matches ErrNotAcquired too", what, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		t.Errorf("%s = %v: matches a context error, but the caller's context is live", what, err)
	case ue.Op != "acquire" || !strings.Contains(ue.Err.Error(), "no answer from redis within the wait budget"):
		t.Errorf("%s: cause %q (op %q), want no answer within the wait budget", what, ue.Err, ue.Op)
	case core.Classify(ctx, err) != core.OutcomeUnavailable:
		t.Errorf("%s classified %v", what, core.Classify(ctx, err))
	}
}

// A fresh key nobody holds, Redis frozen, a budget shorter than the I/O
// timeout: the budget cuts the only attempt. Nothing said the lock was
// held, so it is ErrUnavailable (a fail-open adapter may run unlocked),
// returned at the budget, not at the I/O timeout.
func TestFrozenRedisFreshKeyIsUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClientOn(t, srv.NewClient(ioTimeout(time.Second)), core.WithObserver(rec))
	ctx := testkit.Context(t, 10*time.Second)

	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	_, err := c.Acquire(ctx, "frozen:fresh", core.Wait(300*time.Millisecond))
	took := time.Since(start)
	wantUnavailable(t, ctx, "acquire on a fresh key", err)
	if took > 3*time.Second {
		t.Errorf("the acquire returned after %v with a 300ms budget", took)
	}
	ends, contended, _, _ := rec.snapshot()
	if len(ends) != 1 || ends[0].Outcome != core.OutcomeUnavailable || ends[0].Attempts != 1 || contended != 0 {
		t.Fatalf("observer: ends %+v, contended %d", ends, contended)
	}
}

// Waiters of one Client queue behind a head whose acquire Redis never
// answers. Their budgets end while they are queued: nobody saw a holder, so
// each is ErrUnavailable, and so is the head when its own budget cuts its
// call.
func TestFrozenRedisQueuedWaitersAreUnavailable(t *testing.T) {
	const key = "frozen:queue"
	srv := redistest.Start(t)
	sends := newAcquireSends()
	rdb := srv.NewClient(ioTimeout(5 * time.Second))
	rdb.AddHook(testkit.EachCommand(sends.note))
	rec := newRecorder()
	c := newClientOn(t, rdb, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	srv.Pause()
	defer srv.Resume()
	head := startWaiter(ctx, c, key, core.Wait(2*time.Second))
	testkit.Recv(t, sends.ch, 5*time.Second, "the head's acquire sent")
	const n = 4
	var queued []<-chan acquired
	for range n { // budgets that end while the head's call still hangs
		queued = append(queued, startWaiter(ctx, c, key, core.Wait(300*time.Millisecond)))
	}
	for i, ch := range queued {
		r := testkit.Recv(t, ch, 5*time.Second, "a queued waiter")
		wantUnavailable(t, ctx, "queued waiter "+string(rune('0'+i)), r.err)
	}
	r := testkit.Recv(t, head, 10*time.Second, "the head")
	wantUnavailable(t, ctx, "the head", r.err)

	ends, contended, _, _ := rec.snapshot()
	if len(ends) != n+1 || contended != 0 {
		t.Fatalf("%d acquire ends, %d contended, want %d and 0", len(ends), contended, n+1)
	}
	attempted := 0
	for _, e := range ends {
		if e.Outcome != core.OutcomeUnavailable {
			t.Errorf("outcome %v (%v)", e.Outcome, e.Err)
		}
		attempted += e.Attempts
	}
	if attempted != 1 { // the queued waiters never asked Redis: only the head did
		t.Fatalf("%d attempts in all, want only the head's", attempted)
	}
}

// The mixed case. Another Client holds the key; the waiter's attempts were
// answered "held", then Redis froze and the waiter's retry (its fallback
// timer, the holder's TTL) is unanswered when its budget ends. The lock was
// seen held: ErrNotAcquired (timeout), naming the holder, not
// ErrUnavailable, so a fail-open adapter does not run against it; the error
// unwraps to the unanswered call's failure. A second waiter that queued while
// the head waited on that answer counts it too. A third that queued only
// once the retry was in flight saw nothing held during its wait:
// ErrUnavailable.
func TestFrozenRedisAfterSeenHeld(t *testing.T) {
	const key = "frozen:held"
	srv := redistest.Start(t)
	holder := newClient(t, srv, core.WithTTL(time.Second), core.WithOwner("holder"))
	sends := newAcquireSends()
	rdb := srv.NewClient(ioTimeout(5 * time.Second))
	rdb.AddHook(testkit.EachCommand(sends.note))
	rec := newRecorder()
	c := newClientOn(t, rdb, core.WithObserver(rec), core.WithOwner("waiter"))
	ctx := testkit.Context(t, 20*time.Second)

	l, err := holder.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	head := startWaiter(ctx, c, key, core.Wait(3*time.Second))
	// Refused, subscribed, refused again after the confirmation: the head
	// now waits for a release message or its fallback timer (≤ 1s).
	testkit.WaitFor(t, 5*time.Second, "the head refused twice", func() bool { _, n, _, _ := rec.snapshot(); return n >= 2 })
	testkit.Recv(t, sends.ch, time.Second, "the first attempt's send")
	testkit.Recv(t, sends.ch, time.Second, "the second attempt's send")
	queued := startWaiter(ctx, c, key, core.Wait(3*time.Second))
	testkit.WaitFor(t, 5*time.Second, "the second waiter queued", func() bool { return core.Queued(c, key) == 2 })

	srv.Pause()
	defer srv.Resume()
	pausedAt := time.Now()
	for range 5 { // a retry sent before the pause was answered: wait for the next
		if at := testkit.Recv(t, sends.ch, 5*time.Second, "the head's retry while Redis is frozen"); !at.Before(pausedAt) {
			break
		}
	}
	late := startWaiter(ctx, c, key, core.Wait(300*time.Millisecond))
	r := testkit.Recv(t, late, 5*time.Second, "the waiter that queued behind the unanswered retry")
	wantUnavailable(t, ctx, "waiter queued behind the unanswered retry", r.err)

	r = testkit.Recv(t, head, 10*time.Second, "the head")
	var na *core.NotAcquiredError
	var ne net.Error
	switch {
	case !errors.As(r.err, &na) || !na.Timeout():
		t.Fatalf("head = %v, want a timeout NotAcquiredError", r.err)
	case errors.Is(r.err, core.ErrUnavailable):
		t.Fatalf("head = %v: matches ErrUnavailable, a fail-open adapter would run against a held lock", r.err)
	case errors.Is(r.err, context.DeadlineExceeded):
		t.Fatalf("head = %v: matches DeadlineExceeded, but the caller's context is live", r.err)
	case na.Holder.Owner != "holder":
		t.Fatalf("head's error names holder %+v", na.Holder)
	case !strings.Contains(r.err.Error(), "no answer from redis within the wait budget"):
		t.Fatalf("head = %q: does not say its retry went unanswered", r.err)
	case errors.Unwrap(r.err) == nil || !errors.As(r.err, &ne) || !ne.Timeout():
		t.Fatalf("head = %v: does not unwrap to the unanswered call's timeout", r.err)
	case core.Classify(ctx, r.err) != core.OutcomeTimeout:
		t.Fatalf("head classified %v", core.Classify(ctx, r.err))
	}
	r = testkit.Recv(t, queued, 10*time.Second, "the second waiter")
	if !errors.As(r.err, &na) || !na.Timeout() || errors.Is(r.err, core.ErrUnavailable) {
		t.Fatalf("second waiter = %v, want a timeout NotAcquiredError", r.err)
	}
	srv.Resume()
	_ = l.Release(ctx)
}

// The caller's own context ends first (shorter than the budget): the error
// matches ctx.Err(), never ErrUnavailable or ErrNotAcquired, for the head
// in its hung call and for a waiter queued behind it alike.
func TestFrozenRedisCallerContextWins(t *testing.T) {
	const key = "frozen:ctx"
	srv := redistest.Start(t)
	sends := newAcquireSends()
	rdb := srv.NewClient(ioTimeout(5 * time.Second))
	rdb.AddHook(testkit.EachCommand(sends.note))
	rec := newRecorder()
	c := newClientOn(t, rdb, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	srv.Pause()
	defer srv.Resume()
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	head := startWaiter(dctx, c, key, core.Wait(2*time.Second))
	testkit.Recv(t, sends.ch, 5*time.Second, "the head's acquire sent")
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	queued := startWaiter(cctx, c, key, core.Wait(2*time.Second))
	testkit.WaitFor(t, 5*time.Second, "the second waiter queued", func() bool { return core.Queued(c, key) == 2 })
	ccancel()

	r := testkit.Recv(t, queued, 5*time.Second, "the cancelled waiter")
	if !errors.Is(r.err, context.Canceled) || errors.Is(r.err, core.ErrUnavailable) || errors.Is(r.err, core.ErrNotAcquired) ||
		core.Classify(cctx, r.err) != core.OutcomeCanceled {
		t.Errorf("cancelled queued waiter = %v, want only Canceled", r.err)
	}
	r = testkit.Recv(t, head, 5*time.Second, "the head")
	if !errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, core.ErrUnavailable) || errors.Is(r.err, core.ErrNotAcquired) ||
		core.Classify(dctx, r.err) != core.OutcomeDeadline {
		t.Errorf("head past its caller's deadline = %v (ctx.Err %v, classified %v), want only DeadlineExceeded", r.err, dctx.Err(), core.Classify(dctx, r.err))
	}
}

// Refusals that need no answer from Redis stay ErrNotAcquired while it is
// frozen: the lock is seen held by a lease of this Client (NoWait, a wait
// queued behind it) or the local queue is full (MaxWaiters). None of them
// sends a command.
func TestFrozenRedisLocalRefusals(t *testing.T) {
	const key = "frozen:local"
	srv := redistest.Start(t)
	cmds := &cmdCounter{}
	rdb := srv.NewClient(ioTimeout(5 * time.Second))
	rdb.AddHook(cmds)
	rec := newRecorder()
	c := newClientOn(t, rdb, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	srv.Pause()
	defer srv.Resume()
	before := cmds.n.Load()
	var na *core.NotAcquiredError
	start := time.Now()
	if _, err := c.Acquire(ctx, key, core.NoWait()); !errors.As(err, &na) || na.Timeout() || errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("NoWait on a key this Client holds = %v, want an immediate NotAcquiredError", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the local NoWait refusal took %v", took)
	}
	if _, err := c.Acquire(ctx, key, core.Wait(300*time.Millisecond)); !errors.As(err, &na) || !na.Timeout() || errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("a wait behind this Client's lease = %v, want a timeout NotAcquiredError", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting := startWaiter(wctx, c, key, core.MaxWaiters(1))
	testkit.WaitFor(t, 5*time.Second, "a waiter queued", func() bool { return core.Queued(c, key) == 1 })
	if _, err := c.Acquire(ctx, key, core.MaxWaiters(1), core.Wait(time.Minute)); !errors.As(err, &na) || na.Timeout() || errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("a full local queue = %v, want an immediate NotAcquiredError", err)
	}
	cancel()
	testkit.Recv(t, waiting, 5*time.Second, "the cancelled waiter")
	if n := cmds.n.Load() - before; n != 0 {
		t.Fatalf("local refusals sent %d commands", n)
	}
	ends, _, _, _ := rec.snapshot()
	for _, e := range ends[1:4] {
		if !e.Outcome.NotAcquired() || e.Attempts != 0 {
			t.Fatalf("local refusal: outcome %v after %d attempts", e.Outcome, e.Attempts)
		}
	}
	srv.Resume()
	_ = l.Release(ctx)
}

// Redlock takes the same path: two of three masters frozen, the wait
// budget ends during the fan-out (each node's bound, WithNodeTimeout, is
// longer). No node said the lock was held: ErrUnavailable, naming the
// nodes that did not answer.
func TestRedlockFrozenMajorityIsUnavailable(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	nodes := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		nodes[i] = s.NewClient(ioTimeout(5 * time.Second))
	}
	c, err := core.NewRedlock(nodes, core.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := testkit.Context(t, 20*time.Second)

	for _, s := range srvs[1:] {
		s.Pause()
		defer s.Resume()
	}
	start := time.Now()
	_, err = c.Acquire(ctx, "frozen:redlock", core.Wait(300*time.Millisecond))
	took := time.Since(start)
	wantUnavailable(t, ctx, "Redlock acquire", err)
	var qe *core.QuorumError
	if !errors.As(err, &qe) || len(qe.Failed) != 2 {
		t.Fatalf("Redlock acquire = %v, want the two frozen nodes named", err)
	}
	if took > 5*time.Second {
		t.Fatalf("the Redlock acquire returned after %v", took)
	}
}
