package core_test

import (
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The engine runs on the sentinel failover client (a *redis.Client that
// finds the master through sentinel): lock, contend, wake, renew.
func TestSentinelFailoverClient(t *testing.T) {
	master := redistest.Start(t)
	sen := redistest.StartSentinel(t, master, "locks")
	a := newClientOn(t, sen.FailoverClient(t), core.WithTTL(time.Second))
	rec := newRecorder()
	b := newClientOn(t, sen.FailoverClient(t), core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := a.Acquire(ctx, "sentinel:1")
	if err != nil {
		t.Fatal(err)
	}
	res := startWaiter(ctx, b, "sentinel:1")
	testkit.WaitFor(t, 5*time.Second, "the waiter waiting", func() bool { _, n, _, _ := rec.snapshot(); return n >= 2 })
	first := l.Until()
	testkit.WaitFor(t, 5*time.Second, "a renewal", func() bool { return l.Until().After(first) })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, res, 10*time.Second, "the waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.l.Release(ctx)
	if end := testkit.Recv(t, rec.endCh, 10*time.Second, "the waiter's AcquireEnd"); end.Attempts != 3 {
		t.Fatalf("waiter took %d attempts, want 3 (woken by the release message)", end.Attempts)
	}
}
