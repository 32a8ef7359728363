package core_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// An acquire and release with nothing in between, the uncontended request,
// wakes no goroutine of the Client: the renewal scheduler, whose next event
// is far off, stays asleep. (It used to be poked whenever it had last found
// its heap empty, and woken by that poke it found the heap empty again, the
// lease released meanwhile: one wake-up, a thread hand-off on a busy
// machine, per cycle.) Counted by the scheduler's own look at its leases.
func TestUncontendedCycleWakesNoScheduler(t *testing.T) {
	c, ticks := tickCountingClient(t)
	ctx := testkit.Context(t, 30*time.Second)
	const n = 500
	for range n {
		l, err := c.Acquire(ctx, "wake:1")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler looks once when it starts; renewals are DefaultTTL/3
	// away. A few more looks would be harmless; one per cycle is the bug.
	if got := ticks.Load(); got > 5 {
		t.Fatalf("the renewal scheduler woke %d times in %d uncontended cycles", got, n)
	}
	t.Logf("%d scheduler wake-ups in %d cycles", ticks.Load(), n)
}

// Nor does a hand-off inside the Client: the receiver's lease, confirmed
// by the hand-off's reply while it holds, brings the timer forward itself
// as a new lease does. Two goroutines pass one key back and forth, each
// holding it for a millisecond (long enough for the reply to come while it
// holds); each release hands the lock to the other, which waits in the
// local queue.
func TestHandoffWakesNoScheduler(t *testing.T) {
	obs := &handoffCounter{}
	c, ticks := tickCountingClient(t, core.WithObserver(obs))
	ctx := testkit.Context(t, 30*time.Second)
	const n = 100
	handoffs := &obs.n
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for range n {
				l, err := c.Acquire(ctx, "wake:handoff")
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond) // the critical section
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if handoffs.Load() < n/2 {
		t.Fatalf("only %d of %d holds came by a hand-off: the test did not exercise it", handoffs.Load(), 2*n)
	}
	if got := ticks.Load(); got > 5 {
		t.Fatalf("the renewal scheduler woke %d times in %d holds (%d by a hand-off)", got, 2*n, handoffs.Load())
	}
	t.Logf("%d scheduler wake-ups in %d holds, %d by a hand-off", ticks.Load(), 2*n, handoffs.Load())
}

// tickCountingClient is a Client on a redis-server of its own, closed at
// cleanup, whose renewal scheduler counts its looks at its leases.
func tickCountingClient(t *testing.T, opts ...core.Option) (*core.Client, *atomic.Int64) {
	t.Helper()
	ticks := &atomic.Int64{}
	c := newClient(t, redistest.Start(t), append(opts, core.WithSchedulerLooks(func() { ticks.Add(1) }))...)
	return c, ticks
}
