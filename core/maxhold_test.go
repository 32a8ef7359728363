package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A lease held for its MaxHold: its context ends with cause ErrMaxHold
// while the lock is still its own in Redis (nobody else may take it yet),
// renewal stops, and, never released, the lock expires within one TTL.
// Without MaxHold it would be renewed until the Client closed.
//
// The lease is renewed every TTL/3, so at its MaxHold the lock has at least
// 2/3 of a TTL left: with a TTL of 1 s the test has 660 ms or more to see
// Done and Inspect the lock (a 300 ms TTL left about 200 ms, which a loaded
// machine under -race can use up). MaxHold 2*TTL still gives about 5
// renewals before it.
func TestMaxHoldEndsTheLeaseAndItsRenewal(t *testing.T) {
	srv := redistest.Start(t)
	obs := newRecorder()
	const ttl = time.Second
	c := testkit.Client(t, srv.NewClient(), core.WithTTL(ttl), core.WithObserver(obs))
	other := testkit.Client(t, srv.NewClient(), core.WithTTL(ttl))
	ctx := testkit.Context(t, 30*time.Second)
	l, err := c.Acquire(ctx, "mh", core.MaxHold(2*ttl))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, l.Done(), 10*time.Second, "the lease's context to end at its MaxHold")
	if cause := context.Cause(l.Context()); !errors.Is(cause, core.ErrMaxHold) || !errors.Is(l.Err(), core.ErrMaxHold) {
		t.Fatalf("at MaxHold: cause %v, Err %v; want ErrMaxHold", cause, l.Err())
	}
	if obs.renewCalls() == 0 {
		t.Fatal("never renewed before its MaxHold: the test proves nothing about renewal stopping")
	}
	if h, ok, err := other.Inspect(ctx, "mh"); err != nil || !ok || h.Token != l.Token() {
		t.Fatalf("right after MaxHold the lock must still be the holder's: held %v token %d (want %d) %v", ok, h.Token, l.Token(), err)
	}
	renewedAtHold := obs.renewCalls()
	// Never released: it expires within one TTL, since nobody renews it.
	testkit.WaitFor(t, 10*time.Second, "the lock to expire after its MaxHold", func() bool {
		_, ok, err := other.Inspect(ctx, "mh")
		return err == nil && !ok
	})
	causes, renewed := obs.lostCauses(), obs.renewCalls()
	if renewed > renewedAtHold+1 { // one renewal may have been in flight at the MaxHold
		t.Errorf("renewed %d times after its MaxHold", renewed-renewedAtHold)
	}
	if len(causes) != 1 || !errors.Is(causes[0], core.ErrMaxHold) {
		t.Errorf("Observer.Lost told %v, want ErrMaxHold once", causes)
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("Release after the expiry = %v, want ErrNotHeld", err)
	}
}

// The holder that returns after its MaxHold releases the lock at once: the
// next one does not wait for the expiry.
func TestMaxHoldReleaseFreesAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := testkit.Client(t, srv.NewClient()) // TTL 30s: only a release frees it in time
	ctx := testkit.Context(t, 30*time.Second)
	l, err := c.Acquire(ctx, "mh", core.MaxHold(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	fctx, stop := l.Bind(ctx)
	defer stop()
	testkit.Recv(t, fctx.Done(), 10*time.Second, "the bound context to end")
	if !errors.Is(context.Cause(fctx), core.ErrMaxHold) {
		t.Fatalf("bound context's cause %v, want ErrMaxHold", context.Cause(fctx))
	}
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("Extend after MaxHold = %v, want ErrMaxHold", err)
	}
	if _, err := c.Acquire(context.WithoutCancel(fctx), "mh", core.Reentrant(), core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Error("a reentrant acquire nested into a lease past its MaxHold")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after MaxHold: %v", err)
	}
	n, err := c.Acquire(ctx, "mh", core.NoWait())
	if err != nil {
		t.Fatalf("the next holder after the release: %v", err)
	}
	_ = n.Release(ctx)
}

// Several keys: the MultiLease ends with the first lease's MaxHold.
func TestMaxHoldSeveralKeys(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	m, err := c.AcquireAll(ctx, []string{"a", "b"}, core.MaxHold(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, m.Done(), 10*time.Second, "the MultiLease to end")
	if !errors.Is(context.Cause(m.Context()), core.ErrMaxHold) || !errors.Is(m.Err(), core.ErrMaxHold) {
		t.Fatalf("cause %v, Err %v; want ErrMaxHold", context.Cause(m.Context()), m.Err())
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
