package otellock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/codes"
)

// TestKindSpans: every lease's spans say what it is: a mutex, a semaphore
// permit (with its limit), a read or a write side; a semaphore whose
// permits are all held ends lock.acquire "limited", status Unset (the limit
// working, not a fault), naming the holder whose permit frees first.
func TestKindSpans(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)

	for _, tc := range []struct {
		kind    string
		acquire func(context.Context) (*core.Lease, error)
	}{
		{"mutex", func(ctx context.Context) (*core.Lease, error) { return c.Acquire(ctx, "k") }},
		{"semaphore", func(ctx context.Context) (*core.Lease, error) { return c.Semaphore("k", 1).Acquire(ctx) }},
		{"read", func(ctx context.Context) (*core.Lease, error) { return c.RWLock("k").RLock(ctx) }},
		{"write", func(ctx context.Context) (*core.Lease, error) { return c.RWLock("k").Lock(ctx) }},
	} {
		tel.sr.Reset()
		l, err := tc.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wantAttr(t, tel.one(t, otellock.SpanAcquire), otellock.AttrKind, tc.kind)
		wantAttr(t, tel.one(t, otellock.SpanHold), otellock.AttrKind, tc.kind)
	}

	held, err := c.Semaphore("exports", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	tel.sr.Reset()
	if _, err := c.Semaphore("exports", 1).Acquire(ctx, core.NoWait()); core.Classify(ctx, err) != core.OutcomeLimited {
		t.Fatalf("second permit of 1: %v", err)
	}
	acq := tel.one(t, otellock.SpanAcquire)
	wantAttr(t, acq, otellock.AttrOutcome, "limited")
	wantAttr(t, acq, otellock.AttrErrorType, "limited")
	wantAttr(t, acq, otellock.AttrLimit, int64(1))
	if acq.Status().Code != codes.Unset {
		t.Errorf("limited acquire status %v", acq.Status().Code)
	}
	if len(acq.Events()) != 1 {
		t.Errorf("limited acquire names %d holders, want 1", len(acq.Events()))
	}
}
