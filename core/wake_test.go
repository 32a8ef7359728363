package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// startWaiter runs Acquire on c in a goroutine and returns its result channel.
func startWaiter(ctx context.Context, c *core.Client, key string, opts ...core.AcquireOption) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(ctx, key, opts...)
		ch <- acquired{l, err}
	}()
	return ch
}

type acquired struct {
	l   *core.Lease
	err error
}

// A waiter in another Client acquires after the release because of the
// release message: its attempts are exactly contended, contended after the
// subscription was confirmed, then the winning one. The holder keeps the
// lock for a second after the waiter settled, and the waiter must not try
// again in that window: anything polling faster than once a second fails
// here. The TTL fallback (30s) would not fire within the test's context.
func TestWaiterWokenByReleaseMessage(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	waiter := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 15*time.Second)

	l, err := holder.Acquire(ctx, "job:1")
	if err != nil {
		t.Fatal(err)
	}
	res := startWaiter(ctx, waiter, "job:1")
	testkit.WaitFor(t, 10*time.Second, "two contended attempts", func() bool {
		_, contended, _, _ := rec.snapshot()
		return contended >= 2
	})
	time.Sleep(time.Second) // the window in which nothing may happen (an absence has no signal)
	if _, contended, _, _ := rec.snapshot(); contended != 2 {
		t.Fatalf("the waiter made %d contended attempts while the lock stayed held: it polls", contended)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, res, 10*time.Second, "the waiter")
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	defer r.l.Release(ctx)
	end := testkit.Recv(t, rec.endCh, 10*time.Second, "the waiter's AcquireEnd")
	if end.Outcome != core.OutcomeAcquired || end.Attempts != 3 {
		t.Fatalf("waiter outcome %v after %d attempts, want acquired after 3", end.Outcome, end.Attempts)
	}
	if r.l.Token() <= l.Token() {
		t.Fatalf("token %d not above holder's %d", r.l.Token(), l.Token())
	}
}

// Killing the notification connection while a waiter waits does not strand
// it: the reconnect is confirmed again and the waiter retries, and the next
// release still reaches it.
func TestWaiterSurvivesPubSubKill(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	waiter := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	l, err := holder.Acquire(ctx, "job:2")
	if err != nil {
		t.Fatal(err)
	}
	res := startWaiter(ctx, waiter, "job:2")
	testkit.WaitFor(t, 10*time.Second, "two contended attempts", func() bool {
		_, contended, _, _ := rec.snapshot()
		return contended >= 2
	})
	n, err := srv.Client.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
	if err != nil || n < 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v", n, err)
	}
	// After the reconnect is confirmed the waiter retries once more.
	testkit.WaitFor(t, 10*time.Second, "a retry after the reconnect", func() bool {
		_, contended, _, _ := rec.snapshot()
		return contended >= 3
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, res, 10*time.Second, "the waiter")
	if r.err != nil {
		t.Fatalf("waiter after pub/sub kill: %v", r.err)
	}
	_ = r.l.Release(ctx)
}

// Kill the notification connection and release at once, so the release
// message may be lost: the waiter still acquires, well before the TTL.
func TestWaiterSurvivesLostMessage(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newRecorder()
	waiter := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	for i := range 5 {
		l, err := holder.Acquire(ctx, "job:3")
		if err != nil {
			t.Fatal(err)
		}
		res := startWaiter(ctx, waiter, "job:3")
		testkit.WaitFor(t, 10*time.Second, "waiter waiting", func() bool {
			_, contended, _, _ := rec.snapshot()
			return contended >= 2
		})
		_ = srv.Client.ClientKillByFilter(ctx, "TYPE", "pubsub").Err()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := testkit.Recv(t, res, 10*time.Second, "the waiter")
		if r.err != nil {
			t.Fatalf("round %d: waiter: %v", i, r.err)
		}
		_ = r.l.Release(ctx)
		rec.mu.Lock()
		rec.contended = rec.contended[:0]
		rec.mu.Unlock()
	}
}

// A release announces itself only when someone waits in Redis (the
// uncontended cycle sends no message: TestUncontendedCycleCalls): a release
// with a waiter of another Client queued sends exactly one, by Redis's own
// count, which wakes the waiter (three attempts, as in
// TestWaiterWokenByReleaseMessage), and the waiter's release, with nobody
// waiting, sends none.
func TestReleaseAnnouncedOnlyToWaiters(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	rec := newRecorder()
	waiter := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 15*time.Second)
	if err := srv.Client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "quiet")
	if err != nil {
		t.Fatal(err)
	}
	res := startWaiter(ctx, waiter, "quiet")
	testkit.WaitFor(t, 10*time.Second, "two contended attempts", func() bool {
		_, contended, _, _ := rec.snapshot()
		return contended >= 2
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, res, 10*time.Second, "the waiter")
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if err := r.l.Release(ctx); err != nil { // nobody waits: no message
		t.Fatal(err)
	}
	if n := cmdCalls(t, srv)["publish"]; n != 1 {
		t.Fatalf("%d messages, want 1: the release the waiter waited for", n)
	}
	end := testkit.Recv(t, rec.endCh, 10*time.Second, "the waiter's AcquireEnd")
	if end.Outcome != core.OutcomeAcquired || end.Attempts != 3 {
		t.Fatalf("waiter outcome %v after %d attempts, want acquired after 3 (woken by the message)", end.Outcome, end.Attempts)
	}
}
