package otellock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

const route = "POST /orders/:id/pay"

// An uncontended acquire + release inside a request gives lock.acquire and
// lock.hold, both INTERNAL children of the request span (siblings: the hold
// is not inside the wait), with the lock's attributes and durations that fit
// around the calls; the handler's span is a child of lock.hold.
func TestUncontendedSpans(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)

	rctx, req := tel.request(ctx, "POST /orders/42/pay")
	beforeAcquire := time.Now()
	l, err := c.Acquire(rctx, "order:42", core.Name(route))
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	hctx, stop := l.Bind(rctx)
	_, handler := tel.tp.Tracer("test").Start(hctx, "handler")
	time.Sleep(20 * time.Millisecond) // the handler's work: gives lock.hold a visible length
	handler.End()
	stop()
	beforeRelease := time.Now()
	if err := l.Release(context.WithoutCancel(rctx)); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	req.End()

	reqSC := req.SpanContext()
	acq := tel.one(t, otellock.SpanAcquire)
	hold := tel.one(t, otellock.SpanHold)
	for _, s := range []sdktrace.ReadOnlySpan{acq, hold} {
		if s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("%s kind %v, want internal", s.Name(), s.SpanKind())
		}
		if s.Parent().SpanID() != reqSC.SpanID() || s.SpanContext().TraceID() != reqSC.TraceID() {
			t.Errorf("%s parent %v, want the request span %v", s.Name(), s.Parent().SpanID(), reqSC.SpanID())
		}
		if s.Status().Code != codes.Unset {
			t.Errorf("%s status %v %q", s.Name(), s.Status().Code, s.Status().Description)
		}
		if s.InstrumentationScope().Name != otellock.ScopeName || s.InstrumentationScope().Version != otellock.Version {
			t.Errorf("%s scope %+v", s.Name(), s.InstrumentationScope())
		}
		wantAttr(t, s, otellock.AttrName, route)
		wantAttr(t, s, otellock.AttrKey, otellock.HashKey("order:42"))
		wantAttr(t, s, otellock.AttrFencingToken, l.Token())
	}
	wantAttr(t, acq, otellock.AttrOutcome, "acquired")
	wantAttr(t, acq, otellock.AttrAttempts, int64(1))
	wantAttr(t, acq, otellock.AttrWaitStrategy, "notify")
	if len(acq.Links()) != 0 || len(acq.Events()) != 0 {
		t.Errorf("uncontended acquire has links %v events %v", acq.Links(), acq.Events())
	}

	// Durations: the wait lies inside the Acquire call, the hold from the
	// end of the wait to the Release call, covering the handler.
	if acq.StartTime().Before(beforeAcquire) || acq.EndTime().After(acquired) {
		t.Errorf("lock.acquire [%v, %v] outside the Acquire call [%v, %v]", acq.StartTime(), acq.EndTime(), beforeAcquire, acquired)
	}
	if hold.StartTime().Before(acq.EndTime()) || hold.StartTime().After(acquired) {
		t.Errorf("lock.hold starts at %v, want between the end of the wait %v and Acquire's return %v", hold.StartTime(), acq.EndTime(), acquired)
	}
	if hold.EndTime().Before(beforeRelease) || hold.EndTime().After(released) {
		t.Errorf("lock.hold ends at %v, outside the Release call [%v, %v]", hold.EndTime(), beforeRelease, released)
	}
	if d := hold.EndTime().Sub(hold.StartTime()); d < 20*time.Millisecond {
		t.Errorf("lock.hold lasted %v, shorter than the handler's 20ms", d)
	}

	h := tel.one(t, "handler")
	if h.Parent().SpanID() != hold.SpanContext().SpanID() {
		t.Errorf("handler span's parent %v, want lock.hold %v", h.Parent().SpanID(), hold.SpanContext().SpanID())
	}
}

// A waiter in another Client (another process) and another trace meets the
// lock held: its lock.acquire gets one lock.contended event (one holder,
// however many attempts met it) and a link to the holder's request span
// (lock.acquire's parent: what held the lock), in the holder's trace; both
// spans name their own Client's owner.
func TestContendedWaiterLinksToHolder(t *testing.T) {
	srv := redistest.Start(t)
	holderTel, waiterTel := newTelemetry(t), newTelemetry(t)
	waiterTap := newTap(waiterTel.obs)
	holderC := newClient(t, srv, core.WithObserver(holderTel.obs), core.WithOwner("holder-A"))
	waiterC := newClient(t, srv, core.WithObserver(waiterTap), core.WithOwner("waiter-B"))
	ctx := testkit.Context(t, 30*time.Second)

	hctx, hreq := holderTel.request(ctx, "holder request")
	hl, err := holderC.Acquire(hctx, "order:7", core.Name(route))
	if err != nil {
		t.Fatal(err)
	}

	wctx, wreq := waiterTel.request(ctx, "waiter request")
	type result struct {
		l   *core.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiterC.Acquire(wctx, "order:7", core.Name(route), core.Wait(20*time.Second))
		done <- result{l, err}
	}()
	h := testkit.Recv(t, waiterTap.contended, 10*time.Second, "the waiter's contended attempt")
	if h.Owner != "holder-A" || h.Metadata == "" {
		t.Fatalf("waiter saw holder %+v, want owner holder-A with metadata", h)
	}
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	hreq.End()
	r := testkit.Recv(t, done, 10*time.Second, "the waiter's acquire")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wreq.End()

	holderAcq := holderTel.one(t, otellock.SpanAcquire)
	waiterAcq := waiterTel.one(t, otellock.SpanAcquire)
	if holderAcq.SpanContext().TraceID() == waiterAcq.SpanContext().TraceID() {
		t.Fatal("holder and waiter share a trace; the test needs two")
	}
	if waiterAcq.Parent().SpanID() != wreq.SpanContext().SpanID() {
		t.Errorf("waiter's lock.acquire parent %v, want the waiter request", waiterAcq.Parent().SpanID())
	}
	links := waiterAcq.Links()
	if len(links) != 1 {
		t.Fatalf("waiter's lock.acquire has %d links, want 1 (one holder)", len(links))
	}
	if got, want := links[0].SpanContext.TraceID(), holderAcq.SpanContext().TraceID(); got != want {
		t.Fatalf("link trace id %v, want the holder's %v", got, want)
	}
	if got, want := links[0].SpanContext.SpanID(), hreq.SpanContext().SpanID(); got != want {
		t.Fatalf("link span id %v, want the holder's request span %v (its lock.acquire is %v)", got, want, holderAcq.SpanContext().SpanID())
	}
	if v, _ := attrOf(links[0].Attributes, otellock.AttrHolderFencingToken); v.AsInt64() != hl.Token() {
		t.Errorf("link fencing token attribute %d, want %d", v.AsInt64(), hl.Token())
	}
	wantAttr(t, holderAcq, otellock.AttrOwner, "holder-A")
	wantAttr(t, waiterAcq, otellock.AttrOwner, "waiter-B")
	if v, _ := attrOf(links[0].Attributes, otellock.AttrHolderOwner); v.AsString() != "holder-A" {
		t.Errorf("link owner attribute %q", v.AsString())
	}
	wantAttr(t, waiterAcq, otellock.AttrOutcome, "acquired")
	attempts, _ := attrOf(waiterAcq.Attributes(), otellock.AttrAttempts)
	evs := waiterAcq.Events()
	if attempts.AsInt64() < 2 || len(evs) != 1 {
		t.Fatalf("waiter made %d attempts with %d contended events; want ≥ 2 attempts, one event for the one holder", attempts.AsInt64(), len(evs))
	}
	if _, ok := attrOf(waiterAcq.Attributes(), otellock.AttrHandoff); ok {
		t.Error("an acquire by its own attempt marked as a hand-off")
	}
	for i, ev := range evs {
		if ev.Name != otellock.EventContended {
			t.Fatalf("event %q", ev.Name)
		}
		if v, _ := attrOf(ev.Attributes, otellock.AttrAttempt); v.AsInt64() != 1 {
			t.Errorf("event %d attempt %d, want 1 (the first that met the holder)", i, v.AsInt64())
		}
		if ev.Time.Before(waiterAcq.StartTime()) || ev.Time.After(waiterAcq.EndTime()) {
			t.Errorf("event at %v, outside lock.acquire %v..%v", ev.Time, waiterAcq.StartTime(), waiterAcq.EndTime())
		}
		if v, _ := attrOf(ev.Attributes, otellock.AttrHolderFencingToken); v.AsInt64() != hl.Token() {
			t.Errorf("event holder token %d, want %d", v.AsInt64(), hl.Token())
		}
	}
	// The waiter's token is above the holder's, and its lock.hold exists.
	wantAttr(t, waiterTel.one(t, otellock.SpanHold), otellock.AttrFencingToken, r.l.Token())
	wantAttr(t, waiterTel.one(t, otellock.SpanHold), otellock.AttrOwner, "waiter-B")
	if r.l.Token() <= hl.Token() {
		t.Fatalf("waiter token %d not above holder's %d", r.l.Token(), hl.Token())
	}
}

// A waiter whose wait budget runs out ends lock.acquire with outcome
// timeout and error.type timeout, status Unset (the service's own wait
// policy, not a fault of the lock), and starts no lock.hold.
func TestTimeoutSpan(t *testing.T) {
	srv := redistest.Start(t)
	holderTel, waiterTel := newTelemetry(t), newTelemetry(t)
	holderC := newClient(t, srv, core.WithObserver(holderTel.obs))
	waiterC := newClient(t, srv, core.WithObserver(waiterTel.obs))
	ctx := testkit.Context(t, 20*time.Second)
	hl, err := holderC.Acquire(ctx, "order:9")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hl.Release(ctx) }()

	_, err = waiterC.Acquire(ctx, "order:9", core.Name(route), core.Wait(300*time.Millisecond))
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || !na.Timeout() {
		t.Fatalf("err = %v, want a timed-out ErrNotAcquired", err)
	}
	acq := waiterTel.one(t, otellock.SpanAcquire)
	if acq.Status().Code != codes.Unset {
		t.Fatalf("status %v %q, want Unset", acq.Status().Code, acq.Status().Description)
	}
	wantAttr(t, acq, otellock.AttrOutcome, "timeout")
	wantAttr(t, acq, otellock.AttrErrorType, "timeout")
	if len(acq.Links()) != 1 {
		t.Errorf("timed-out waiter has %d holder links, want 1", len(acq.Links()))
	}
	if n := len(waiterTel.ended(otellock.SpanHold)); n != 0 {
		t.Fatalf("%d lock.hold spans after a timeout", n)
	}
	if d := acq.EndTime().Sub(acq.StartTime()); d < 300*time.Millisecond {
		t.Fatalf("lock.acquire lasted %v, less than the 300ms budget", d)
	}
}

// NoWait on a held lock: outcome contended, status Unset, strategy nowait.
func TestNoWaitContendedSpan(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	other := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	hl, err := other.Acquire(ctx, "order:10")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hl.Release(ctx) }()
	if _, err := c.Acquire(ctx, "order:10", core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("err = %v", err)
	}
	acq := tel.one(t, otellock.SpanAcquire)
	wantAttr(t, acq, otellock.AttrOutcome, "contended")
	wantAttr(t, acq, otellock.AttrErrorType, "contended")
	wantAttr(t, acq, otellock.AttrWaitStrategy, "nowait")
	if acq.Status().Code != codes.Unset {
		t.Fatalf("status %v, want Unset", acq.Status().Code)
	}
}

// A lease lost while held (its Redis key deleted; TTL 1s) ends lock.hold
// with status Error and error.type lost; the confirmed renewal before the
// loss and the failed one are events on it.
func TestLostLeaseEndsHoldSpan(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	tp := newTap(tel.obs)
	c := newClient(t, srv, core.WithObserver(tp), core.WithTTL(time.Second))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "lost:1", core.Name("job"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, tp.renewed, 10*time.Second, "a first renewal"); err != nil {
		t.Fatalf("first renewal: %v", err)
	}
	if n, err := srv.Client.Del(ctx, "lockkit:v1:k:lost:1").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d %v", n, err)
	}
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost after its key was deleted")
	}
	// Lost is reported just after the lease's context ends.
	testkit.WaitFor(t, 10*time.Second, "lock.hold to end", func() bool { return len(tel.ended(otellock.SpanHold)) == 1 })
	hold := tel.one(t, otellock.SpanHold)
	if hold.Status().Code != codes.Error {
		t.Fatalf("lock.hold status %v, want Error", hold.Status().Code)
	}
	wantAttr(t, hold, otellock.AttrErrorType, "lost")
	var outcomes []string
	for _, ev := range hold.Events() {
		if ev.Name == otellock.EventRenewed {
			v, _ := attrOf(ev.Attributes, otellock.AttrOutcome)
			outcomes = append(outcomes, v.AsString())
		}
	}
	if len(outcomes) < 2 || outcomes[0] != otellock.RenewOK || outcomes[len(outcomes)-1] != otellock.RenewLost {
		t.Fatalf("renewal events %v, want ok first and lost last", outcomes)
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Release after loss = %v", err)
	}
	if n := len(tel.ended(otellock.SpanHold)); n != 1 {
		t.Fatalf("%d lock.hold spans ended, want 1 (Release after loss ends nothing)", n)
	}
}

// Closing the Client under a held lease ends lock.hold with error.type closed.
func TestCloseEndsHoldSpan(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)
	if _, err := c.Acquire(ctx, "close:1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	hold := tel.one(t, otellock.SpanHold)
	if hold.Status().Code != codes.Error {
		t.Fatalf("status %v", hold.Status().Code)
	}
	wantAttr(t, hold, otellock.AttrErrorType, "closed")
}

// WithHoldSpan(false): no lock.hold; the lease's context carries the
// request span, and hold metrics are still recorded.
func TestWithoutHoldSpan(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t, otellock.WithHoldSpan(false))
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)
	rctx, req := tel.request(ctx, "request")
	l, err := c.Acquire(rctx, "nohold:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := trace.SpanFromContext(l.Context()).SpanContext().SpanID(); got != req.SpanContext().SpanID() {
		t.Fatalf("lease context span %v, want the request's %v", got, req.SpanContext().SpanID())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	req.End()
	if n := len(tel.ended(otellock.SpanHold)); n != 0 {
		t.Fatalf("%d lock.hold spans with WithHoldSpan(false)", n)
	}
	tel.one(t, otellock.SpanAcquire)
	if n, _ := histCount(t, tel.collect(t), otellock.MetricHoldDuration, mutex); n != 1 {
		t.Fatalf("hold.duration count %d, want 1", n)
	}
}
