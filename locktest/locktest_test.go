package locktest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

// Every Server's goroutines (miniredis, the Clients' renewal and pub/sub,
// go-redis's pool) end with its Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// limit bounds every wait of these tests; none should come near it.
const limit = 10 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	return ctx
}

func TestClientLocks(t *testing.T) {
	srv := locktest.New(t)
	ctx := testCtx(t)
	c := srv.Client()
	if c.Owner() != locktest.Owner {
		t.Fatalf("owner %q, want %q", c.Owner(), locktest.Owner)
	}
	l, err := c.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL() != locktest.DefaultTTL {
		t.Fatalf("TTL %v, want the default %v", l.TTL(), locktest.DefaultTTL)
	}
	h, held, err := c.Inspect(ctx, "order:42")
	if err != nil || !held || h.Owner != locktest.Owner || h.Token != l.Token() {
		t.Fatalf("Inspect = %+v, %v, %v; want held by %s with token %d", h, held, err, locktest.Owner, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	opts := srv.Redis().Options()
	if !opts.ContextTimeoutEnabled || opts.MaxRetries != 0 { // -1 (no re-send), as go-redis stores it
		t.Fatalf("go-redis options: ContextTimeoutEnabled %v, MaxRetries %d", opts.ContextTimeoutEnabled, opts.MaxRetries)
	}
}

func TestHoldByAnother(t *testing.T) {
	seen := &contentions{}
	srv := locktest.New(t, locktest.WithObserver(seen))
	ctx := testCtx(t)
	c := srv.Client()
	other, err := srv.HoldByAnother(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}

	// One attempt: refused at once, naming the other owner.
	_, err = c.TryAcquire(ctx, "order:42")
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Holder.Owner != locktest.OtherOwner || na.Timeout() {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired naming %s", err, locktest.OtherOwner)
	}
	if _, err := c.Acquire(ctx, "order:42", core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Acquire NoWait = %v, want ErrNotAcquired", err)
	}
	// A wait budget runs out: a timeout.
	if _, err = c.Acquire(ctx, "order:42", core.Wait(50*time.Millisecond)); !errors.As(err, &na) || !na.Timeout() {
		t.Fatalf("Acquire Wait(50ms) = %v, want ErrNotAcquired after the budget", err)
	}
	if got := core.Classify(ctx, err); got != core.OutcomeTimeout {
		t.Fatalf("outcome %v, want %v", got, core.OutcomeTimeout)
	}
	// Other keys are free.
	if l, err := c.TryAcquire(ctx, "order:43"); err != nil {
		t.Fatal(err)
	} else {
		_ = l.Release(ctx)
	}

	// A waiter is woken by the other owner's release and gets a larger token.
	before := seen.count()
	got := make(chan *core.Lease, 1)
	go func() {
		l, err := c.Acquire(ctx, "order:42")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	for seen.count() == before { // the waiter met the holder: it now waits for the release
		time.Sleep(time.Millisecond)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		if l.Token() <= other.Token() {
			t.Fatalf("token %d after the other owner's %d", l.Token(), other.Token())
		}
		// Held by the Client now, so the other owner is refused.
		if _, err := srv.HoldByAnother(ctx, "order:42"); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("HoldByAnother of a held key = %v, want ErrNotAcquired", err)
		}
		_ = l.Release(ctx)
	case <-time.After(limit):
		t.Fatal("the waiter was not woken by the release")
	}
}

// contentions counts the attempts that found a lock held.
type contentions struct {
	core.NopObserver
	n atomic.Int32
}

func (c *contentions) Contended(context.Context, core.AcquireInfo, core.Holder, int) { c.n.Add(1) }

func (c *contentions) count() int32 { return c.n.Load() }

func TestSetUnavailable(t *testing.T) {
	srv := locktest.New(t)
	ctx := testCtx(t)
	c := srv.Client()
	srv.SetUnavailable(true)
	for _, opts := range [][]core.AcquireOption{nil, {core.NoWait()}, {core.Wait(5 * time.Second)}} {
		start := time.Now()
		_, err := c.Acquire(ctx, "order:42", opts...)
		if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("Acquire%v = %v, want ErrUnavailable", opts, err)
		}
		if got := core.Classify(ctx, err); got != core.OutcomeUnavailable {
			t.Fatalf("outcome %v, want %v", got, core.OutcomeUnavailable)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Acquire took %v: an error reply must fail it at once, not at the budget", d)
		}
	}
	if _, err := c.TryAcquire(ctx, "order:42"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("TryAcquire = %v, want ErrUnavailable", err)
	}
	if _, _, err := c.Inspect(ctx, "order:42"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Inspect = %v, want ErrUnavailable", err)
	}
	if err := srv.LoseLease(ctx, "order:42"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("LoseLease = %v, want ErrUnavailable", err)
	}

	srv.SetUnavailable(false)
	l, err := c.Acquire(ctx, "order:42", core.NoWait())
	if err != nil {
		t.Fatalf("Acquire after SetUnavailable(false) = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lease held while Redis is unavailable cannot be renewed: it is lost at
// its local deadline, and a release then fails too.
func TestSetUnavailableWhileHeld(t *testing.T) {
	const ttl = 100 * time.Millisecond
	srv := locktest.New(t, locktest.WithTTL(ttl))
	ctx := testCtx(t)
	l, err := srv.Client().Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	srv.SetUnavailable(true)
	select {
	case <-l.Done():
	case <-time.After(limit):
		t.Fatal("the lease outlived an unavailable Redis")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, core.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	srv.SetUnavailable(false)
}

func TestLoseLease(t *testing.T) {
	srv := locktest.New(t)
	ctx := testCtx(t)
	c := srv.Client()
	l, err := c.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	hctx, stop := l.Bind(ctx) // what an adapter gives the handler
	defer stop()

	start := time.Now()
	if err := srv.LoseLease(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Cancelled before LoseLease returned, with the cause an adapter's
	// handler sees.
	for name, x := range map[string]context.Context{"lease": l.Context(), "bound": hctx} {
		select {
		case <-x.Done():
		default:
			t.Fatalf("%s context not done when LoseLease returned", name)
		}
		if cause := context.Cause(x); !errors.Is(cause, core.ErrLost) {
			t.Fatalf("%s context cause %v, want ErrLost", name, cause)
		}
	}
	if !errors.Is(l.Err(), core.ErrLost) {
		t.Fatalf("Lease.Err = %v, want ErrLost", l.Err())
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Release after loss = %v, want ErrNotHeld matching ErrLost", err)
	}
	if max := locktest.DefaultTTL/3 + 500*time.Millisecond; took > max {
		t.Fatalf("LoseLease took %v, want within a renewal interval (%v)", took, max)
	}
	t.Logf("LoseLease took %v (TTL %v)", took, locktest.DefaultTTL)

	// The lock is free.
	next, err := c.Acquire(ctx, "order:42", core.NoWait())
	if err != nil {
		t.Fatalf("Acquire after the loss = %v", err)
	}
	if next.Token() <= l.Token() {
		t.Fatalf("token %d after the lost lease's %d", next.Token(), l.Token())
	}
	_ = next.Release(ctx)
}

// LoseLease called from inside the critical section, as a fake dependency
// of a handler would: Do's function sees its context end with ErrLost.
func TestLoseLeaseInsideDo(t *testing.T) {
	srv := locktest.New(t)
	ctx := testCtx(t)
	err := srv.Client().Do(ctx, "order:42", func(ctx context.Context) error {
		if err := srv.LoseLease(ctx, "order:42"); err != nil {
			t.Error(err)
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, core.ErrLost) {
		t.Fatalf("Do = %v, want ErrLost", err)
	}
}

// The wait ends as soon as the lease's renewal finds the lock gone: with a
// short TTL, sooner.
func TestLoseLeaseShortTTL(t *testing.T) {
	const ttl = 60 * time.Millisecond
	srv := locktest.New(t, locktest.WithTTL(ttl))
	ctx := testCtx(t)
	l, err := srv.Client().Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL() != ttl {
		t.Fatalf("TTL %v, want %v", l.TTL(), ttl)
	}
	if err := srv.LoseLease(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(l.Context()))
	}
}

func TestLoseLeaseRefused(t *testing.T) {
	srv := locktest.New(t)
	ctx := testCtx(t)
	if err := srv.LoseLease(ctx, "order:1"); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("LoseLease of a free key = %v, want ErrNotHeld", err)
	}
	if _, err := srv.HoldByAnother(ctx, "order:2"); err != nil {
		t.Fatal(err)
	}
	if err := srv.LoseLease(ctx, "order:2"); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("LoseLease of another owner's lock = %v, want ErrNotHeld", err)
	}
	if _, err := srv.Client().TryAcquire(ctx, "order:2"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("the other owner's lock was touched: %v", err)
	}
}

// A lease released after the lock was removed, before its renewal noticed,
// was never seen lost: LoseLease says so rather than succeed.
func TestLoseLeaseReleasedMeanwhile(t *testing.T) {
	srv := locktest.New(t, locktest.WithTTL(time.Minute)) // no renewal during the test
	ctx := testCtx(t)
	c := srv.Client()
	l, err := c.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.LoseLease(ctx, "order:42") }()
	for {
		if _, held, err := c.Inspect(ctx, "order:42"); err != nil {
			t.Fatal(err)
		} else if !held {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release of a removed lock = %v, want ErrNotHeld", err)
	}
	if err := <-done; !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("LoseLease = %v, want ErrNotHeld", err)
	}
}

func TestLoseLeaseContextEnds(t *testing.T) {
	srv := locktest.New(t, locktest.WithTTL(time.Minute))
	ctx := testCtx(t)
	if _, err := srv.Client().Acquire(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := srv.LoseLease(short, "order:42"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LoseLease = %v, want DeadlineExceeded", err)
	}
}

// recorder keeps the events locktest forwards.
type recorder struct {
	core.NopObserver
	mu             sync.Mutex
	acquired, lost int
}

func (r *recorder) AcquireEnd(ctx context.Context, _ core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.Err == nil {
		r.acquired++
	}
	return ctx
}

func (r *recorder) Lost(context.Context, core.LeaseInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost++
}

func TestWithObserver(t *testing.T) {
	rec := &recorder{}
	srv := locktest.New(t, locktest.WithObserver(rec))
	ctx := testCtx(t)
	if _, err := srv.Client().Acquire(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	if err := srv.LoseLease(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.acquired != 1 || rec.lost != 1 {
		t.Fatalf("observer saw %d acquired, %d lost; want 1, 1", rec.acquired, rec.lost)
	}
}

// Client options reach both Clients: with a prefix, the other owner still
// excludes the Client, and the keys carry the prefix.
func TestWithClientOptions(t *testing.T) {
	srv := locktest.New(t, locktest.WithClientOptions(core.WithPrefix("shop"), core.WithOwner("replica-1")))
	ctx := testCtx(t)
	if _, err := srv.HoldByAnother(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	_, err := srv.Client().TryAcquire(ctx, "order:42")
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Holder.Owner != locktest.OtherOwner {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired naming %s", err, locktest.OtherOwner)
	}
	if n, err := srv.Redis().Exists(ctx, "shop:v1:k:order:42").Result(); err != nil || n != 1 {
		t.Fatalf("lock hash under the prefix: %d, %v", n, err)
	}
	l, err := srv.Client().Acquire(ctx, "order:43")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.LoseLease(ctx, "order:43"); err != nil {
		t.Fatalf("LoseLease with WithOwner given: %v", err)
	}
	if !errors.Is(l.Err(), core.ErrLost) {
		t.Fatalf("Lease.Err = %v", l.Err())
	}
}

func TestStartClose(t *testing.T) {
	if _, err := locktest.Start(locktest.WithTTL(time.Millisecond)); !errors.Is(err, core.ErrInvalidOption) {
		t.Fatalf("Start with a TTL below MinTTL = %v, want ErrInvalidOption", err)
	}
	srv, err := locktest.Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	l, err := srv.Client().Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	srv.SetUnavailable(true) // Close makes Redis available again to release
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if !errors.Is(l.Err(), core.ErrClosed) {
		t.Fatalf("lease after Close: %v, want ErrClosed", l.Err())
	}
}

// Servers are independent: one's lock is nothing to another's.
func TestServersIndependent(t *testing.T) {
	a, b := locktest.New(t), locktest.New(t)
	ctx := testCtx(t)
	if _, err := a.HoldByAnother(ctx, "order:42"); err != nil {
		t.Fatal(err)
	}
	a.SetUnavailable(true)
	l, err := b.Client().TryAcquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}
