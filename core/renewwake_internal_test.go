package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

// An acquire and release with nothing in between, the uncontended request,
// wakes no goroutine of the Client: the renewal scheduler, whose next event
// is far off, stays asleep. (It used to be poked whenever it had last found
// its heap empty, and woken by that poke it found the heap empty again, the
// lease released meanwhile: one wake-up, a thread hand-off on a busy
// machine, per cycle.) Counted by the scheduler's own look at its leases.
func TestUncontendedCycleWakesNoScheduler(t *testing.T) {
	srv := redistest.Start(t)
	var ticks atomic.Int64
	c, err := New(srv.NewClient(), withHooks(testHooks{tickFn: func() { ticks.Add(1) }}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
