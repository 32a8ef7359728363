package otellock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Requests of one process queued on a lock held by another process: only
// the head of the local queue asks Redis, yet every request's lock.acquire
// has a lock.contended event naming the holder (owner, fencing token,
// dated within the wait) and a link to the holder's request span; the
// ones handed the lock by a lease of their process say so, with no
// attempt of their own.
func TestLocalQueueWaitersLinkToHolder(t *testing.T) {
	srv := redistest.Start(t)
	holderTel, waiterTel := newTelemetry(t), newTelemetry(t)
	tp := newTap(waiterTel.obs)
	holderC := newClient(t, srv, core.WithObserver(holderTel.obs), core.WithOwner("holder-H"))
	waiterC := newClient(t, srv, core.WithObserver(tp), core.WithOwner("waiter-W"))
	ctx := testkit.Context(t, 30*time.Second)
	const key, n = "order:q", 4

	hctx, hreq := holderTel.request(ctx, "holder request")
	hl, err := holderC.Acquire(hctx, key, core.Name(route))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for i := range n {
		go func() {
			rctx, req := waiterTel.request(ctx, fmt.Sprint("waiter request ", i))
			defer req.End()
			l, err := waiterC.Acquire(rctx, key, core.Name(route), core.Wait(20*time.Second))
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		}()
	}
	testkit.Recv(t, tp.contended, 10*time.Second, "the head's refused attempt")
	testkit.WaitFor(t, 10*time.Second, "every request queued", func() bool { return testkit.Tables(waiterC)["waiters"] == n })
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	hreq.End()
	for range n {
		if err := testkit.Recv(t, errs, 10*time.Second, "a waiter"); err != nil {
			t.Fatal(err)
		}
	}

	spans := waiterTel.ended(otellock.SpanAcquire)
	if len(spans) != n {
		t.Fatalf("%d lock.acquire spans, want %d", len(spans), n)
	}
	handoffs := 0
	for _, s := range spans {
		if !hasHolderEvent(s, "holder-H", hl.Token()) {
			t.Errorf("lock.acquire %v: no lock.contended naming holder-H/%d: %+v", s.SpanContext().SpanID(), hl.Token(), s.Events())
		}
		linked := false
		for _, l := range s.Links() {
			linked = linked || l.SpanContext.SpanID() == hreq.SpanContext().SpanID()
		}
		if !linked {
			t.Errorf("lock.acquire %v: no link to the holder's request span %v: %+v", s.SpanContext().SpanID(), hreq.SpanContext().SpanID(), s.Links())
		}
		if v, ok := attrOf(s.Attributes(), otellock.AttrHandoff); ok && v.AsBool() {
			handoffs++
			wantAttr(t, s, otellock.AttrAttempts, int64(0))
		}
		wantAttr(t, s, otellock.AttrOwner, "waiter-W")
	}
	if handoffs == 0 {
		t.Error("no lock.acquire marked as a hand-off")
	}
}

func hasHolderEvent(s sdktrace.ReadOnlySpan, owner string, token int64) bool {
	for _, ev := range s.Events() {
		o, _ := attrOf(ev.Attributes, otellock.AttrHolderOwner)
		tk, _ := attrOf(ev.Attributes, otellock.AttrHolderFencingToken)
		if ev.Name == otellock.EventContended && o.AsString() == owner && tk.AsInt64() == token &&
			!ev.Time.Before(s.StartTime()) && !ev.Time.After(s.EndTime()) {
			return true
		}
	}
	return false
}

// Status Error means the lock could not do its job; outcomes that are a
// policy or the caller's decision leave it Unset. error.type is set on
// every acquire that did not get the lock, equal to its outcome.
func TestStatusRule(t *testing.T) {
	tel := newTelemetry(t)
	info := core.AcquireInfo{Key: "k", Name: "n", Start: time.Now()}
	for _, tc := range []struct {
		o   core.Outcome
		err error
		red bool
	}{
		{core.OutcomeAcquired, nil, false},
		{core.OutcomeContended, &core.NotAcquiredError{Key: "k"}, false},
		{core.OutcomeTimeout, &core.NotAcquiredError{Key: "k"}, false},
		{core.OutcomeLimited, &core.NotAcquiredError{Key: "k", Limit: 3}, false},
		{core.OutcomeCanceled, context.Canceled, false},
		{core.OutcomeDeadline, context.DeadlineExceeded, false},
		{core.OutcomeUnavailable, core.ErrUnavailable, true},
		{core.OutcomeClosed, core.ErrClosed, true},
		{core.OutcomeMisconfigured, core.ErrInvalidOption, true},
		{core.OutcomeBadKey, core.ErrInvalidKey, true},
	} {
		tel.sr.Reset()
		ctx := tel.obs.AcquireStart(context.Background(), info)
		hctx := tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: tc.o, Err: tc.err})
		if tc.o == core.OutcomeAcquired {
			tel.obs.Released(hctx, core.LeaseInfo{Key: "k"}, nil)
		}
		acq := tel.one(t, otellock.SpanAcquire)
		if red := acq.Status().Code == codes.Error; red != tc.red {
			t.Errorf("%v: status %v, want Error %v", tc.o, acq.Status().Code, tc.red)
		}
		et, ok := attrOf(acq.Attributes(), otellock.AttrErrorType)
		if tc.o == core.OutcomeAcquired {
			if ok {
				t.Errorf("acquired with error.type %q", et.AsString())
			}
			continue
		}
		if et.AsString() != tc.o.String() {
			t.Errorf("%v: error.type %q", tc.o, et.AsString())
		}
	}
	// A lease: lost and a failed release are red, a release is not.
	for _, tc := range []struct {
		end func(context.Context)
		red bool
	}{
		{func(ctx context.Context) { tel.obs.Released(ctx, core.LeaseInfo{Key: "k"}, nil) }, false},
		{func(ctx context.Context) { tel.obs.Released(ctx, core.LeaseInfo{Key: "k"}, core.ErrNotHeld) }, true},
		{func(ctx context.Context) { tel.obs.Lost(ctx, core.LeaseInfo{Key: "k"}, core.ErrLost) }, true},
	} {
		tel.sr.Reset()
		ctx := tel.obs.AcquireStart(context.Background(), info)
		tc.end(tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeAcquired}))
		if red := tel.one(t, otellock.SpanHold).Status().Code == codes.Error; red != tc.red {
			t.Errorf("lock.hold red %v, want %v", red, tc.red)
		}
	}
}

// A wait ended by the caller's deadline or cancellation: lock.acquire's
// outcome and error.type agree (deadline_exceeded, canceled), the adapters'
// Classify says the same, and the status stays Unset.
func TestContextEndSpans(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	holder := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	hl, err := holder.Acquire(ctx, "order:ctx")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hl.Release(ctx) }()
	dl, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	cc, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel2)
	for _, tc := range []struct {
		ctx  context.Context
		want core.Outcome
		is   error
	}{{dl, core.OutcomeDeadline, context.DeadlineExceeded}, {cc, core.OutcomeCanceled, context.Canceled}} {
		tel.sr.Reset()
		_, err := c.Acquire(tc.ctx, "order:ctx")
		if !errors.Is(err, tc.is) || core.Classify(tc.ctx, err) != tc.want {
			t.Fatalf("err %v, Classify %v; want %v", err, core.Classify(tc.ctx, err), tc.want)
		}
		acq := tel.one(t, otellock.SpanAcquire)
		wantAttr(t, acq, otellock.AttrOutcome, tc.want.String())
		wantAttr(t, acq, otellock.AttrErrorType, tc.want.String())
		if acq.Status().Code != codes.Unset {
			t.Errorf("%v: status %v", tc.want, acq.Status().Code)
		}
	}
}
