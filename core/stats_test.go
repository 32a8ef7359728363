package core_test

import (
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Stats counts a held lease and a queued waiter, and reads zero for both
// once they are gone.
func TestStats(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	l, err := c.Acquire(ctx, "stats:1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := c.Acquire(ctx, "stats:1")
		if err == nil {
			err = w.Release(ctx)
		}
		done <- err
	}()
	testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool { return c.Stats().Waiters == 1 })
	if s := c.Stats(); s.Leases != 1 || s.Queues != 1 {
		t.Fatalf("holding one lease with one waiter: %+v", s)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, done, 10*time.Second, "the waiter"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "every table empty", func() bool {
		s := c.Stats()
		return s.Leases == 0 && s.Queues == 0 && s.Waiters == 0 && s.Renewals == 0
	})
}
