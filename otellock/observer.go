package otellock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lockkit/lockkit/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Span and event names.
const (
	SpanAcquire    = "lock.acquire"   // the wait: AcquireStart to AcquireEnd
	SpanHold       = "lock.hold"      // the holding: acquisition to release or loss
	EventContended = "lock.contended" // on lock.acquire: one per distinct holder the wait met
	EventRenewed   = "lock.renewed"   // on lock.hold: one per renewal round
	EventUnlocked  = "lock.unlocked"  // on the request's span: the handler ran without the lock (fail-open)
)

// maxLinks bounds the holders one lock.acquire span records: its
// lock.contended events and its links (and the contentions it counts).
const maxLinks = 32

// New returns a core.Observer that reports lock waits and holds to
// OpenTelemetry: install it with core.New(rdb, core.WithObserver(otellock.New())).
// Providers and propagator are resolved now (the globals unless options say
// otherwise). With no-op providers it costs a few allocations per acquire.
func New(opts ...Option) core.Observer {
	cfg := newConfig(opts)
	return &observer{
		cfg:      cfg,
		tracer:   cfg.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
		prop:     cfg.propagators,
		m:        newInstruments(cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))),
		spanOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)},
	}
}

type observer struct {
	cfg      config
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	m        *instruments
	spanOpts []trace.SpanStartOption // made once: a fresh variadic slice would allocate per span
}

var _ core.Observer = (*observer)(nil)

// acquireCtx is the context AcquireStart returns: it carries the lock.acquire
// span (as the current span) and the state of this one acquire. The engine
// calls the acquire events of one acquire from one goroutine, so the state
// needs no lock.
type acquireCtx struct {
	context.Context                 // trace.ContextWithSpan(parent, span)
	parent          context.Context // the caller's: lock.hold's parent
	span            trace.Span
	start           time.Time           // just after the span's start: the earliest an event is dated
	holders         []metHolder         // holders met so far (at most maxLinks)
	links           []trace.SpanContext // holders linked so far (at most maxLinks)
}

// metHolder is a holder an acquire met: one lease of one owner, and the
// metadata it was last met with.
type metHolder struct {
	holderID
	metadata string
}

// holderID tells holders apart: one lease of one owner.
type holderID struct {
	owner string
	token int64
}

type acquireKey struct{}

func (c *acquireCtx) Value(k any) any {
	if k == (acquireKey{}) {
		return c
	}
	return c.Context.Value(k)
}

func acquireFrom(ctx context.Context) *acquireCtx {
	st, _ := ctx.Value(acquireKey{}).(*acquireCtx)
	return st
}

// holdCtx is the base of the lease's context: the lock.hold span as the
// current span (handler spans become its children) and a mark that this
// observer owns that span, so lease events never end someone else's span.
type holdCtx struct {
	context.Context // trace.ContextWithSpan(parent, hold span)
	span            trace.Span
}

type holdKey struct{}

func (c *holdCtx) Value(k any) any {
	if k == (holdKey{}) {
		return c
	}
	return c.Context.Value(k)
}

func holdFrom(ctx context.Context) trace.Span {
	if h, ok := ctx.Value(holdKey{}).(*holdCtx); ok {
		return h.span
	}
	return nil
}

// AcquireStart starts lock.acquire as a child of the span in ctx (the
// request's) and counts a pending acquire.
func (o *observer) AcquireStart(ctx context.Context, a core.AcquireInfo) context.Context {
	o.m.pending.Add(ctx, 1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", "").add...)
	sctx, span := o.tracer.Start(ctx, SpanAcquire, o.spanOpts...)
	if span.IsRecording() {
		if a.Limit > 0 {
			o.setLockAttrs(span, a.Name, a.Key, a.Owner, AttrKind.String(a.Kind), AttrWaitStrategy.String(a.Strategy), AttrLimit.Int(a.Limit))
		} else {
			o.setLockAttrs(span, a.Name, a.Key, a.Owner, AttrKind.String(kindOf(a.Kind)), AttrWaitStrategy.String(a.Strategy))
		}
	}
	// start is read after the span started, so no event dated from it
	// precedes the span (the SDK reads its clock inside Start).
	return &acquireCtx{Context: sctx, parent: ctx, span: span, start: time.Now()}
}

// setLockAttrs sets name, key (per mode), owner and extra on span.
func (o *observer) setLockAttrs(span trace.Span, name, key, owner string, extra ...attribute.KeyValue) {
	k, withKey := o.cfg.keyAttr(key)
	n := len(extra)
	for _, b := range [...]bool{name != "", withKey, owner != ""} {
		if b {
			n++
		}
	}
	kv := make([]attribute.KeyValue, 0, n) // exact: the SDK keeps it
	if name != "" {
		kv = append(kv, AttrName.String(name))
	}
	if withKey {
		kv = append(kv, k)
	}
	if owner != "" {
		kv = append(kv, AttrOwner.String(owner))
	}
	kv = append(kv, extra...)
	span.SetAttributes(kv...)
}

// HolderMetadata is the span context of the request that acquires (the
// span in the context given to AcquireStart, lock.acquire's parent), as
// the propagator writes it; lock.acquire's own when that one is not
// valid. A waiter that finds this lock held links to it: to the request
// that held the lock, not to its millisecond of acquiring.
func (o *observer) HolderMetadata(ctx context.Context, _ core.AcquireInfo) string {
	st := acquireFrom(ctx)
	if st == nil {
		return ""
	}
	if sc := trace.SpanContextFromContext(st.parent); sc.IsValid() {
		return encodeHolder(o.prop, sc)
	}
	return encodeHolder(o.prop, st.span.SpanContext())
}

// Contended records a holder the wait met, once per distinct holder (owner
// and fencing token) and at most maxLinks of them: it counts it, adds a
// lock.contended event at the moment the holder was met, and links
// lock.acquire to the holder's request span when the holder stored one.
//
// A holder met again with other metadata is one grant that changed hands:
// a grant to a Client's queue names the caller at its head, and when that
// caller gives up before it takes the grant, the next caller of the queue
// takes it under the same owner and token. That is no new contention, but
// the request that holds is another, so it is linked too.
func (o *observer) Contended(ctx context.Context, a core.AcquireInfo, h core.Holder, attempt int) {
	st := acquireFrom(ctx)
	if st != nil {
		id := holderID{h.Owner, h.Token}
		if i := slices.IndexFunc(st.holders, func(m metHolder) bool { return m.holderID == id }); i >= 0 {
			if h.Metadata != "" && h.Metadata != st.holders[i].metadata {
				st.holders[i].metadata = h.Metadata
				o.link(st, h)
			}
			return
		}
		if len(st.holders) >= maxLinks {
			return
		}
		st.holders = append(st.holders, metHolder{id, h.Metadata})
	}
	o.m.contentions.Add(ctx, 1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", "").add...)
	if st == nil || !st.span.IsRecording() {
		return
	}
	// The event is dated when the holder was met; one met before this wait
	// began (the holder it queued behind) at the wait's start.
	attrs := trace.WithAttributes(AttrHolderOwner.String(h.Owner), AttrHolderFencingToken.Int64(h.Token), AttrAttempt.Int(attempt))
	if h.Seen.IsZero() {
		st.span.AddEvent(EventContended, attrs)
	} else {
		at := h.Seen
		if at.Before(st.start) {
			at = st.start
		}
		st.span.AddEvent(EventContended, attrs, trace.WithTimestamp(at))
	}
	o.link(st, h)
}

// link links lock.acquire to the request span h's metadata names, once
// per span and at most maxLinks spans.
func (o *observer) link(st *acquireCtx, h core.Holder) {
	if h.Metadata == "" || len(st.links) >= maxLinks || !st.span.IsRecording() {
		return
	}
	sc := decodeHolder(o.prop, h.Metadata)
	if !sc.IsValid() {
		return
	}
	for _, l := range st.links {
		if l.TraceID() == sc.TraceID() && l.SpanID() == sc.SpanID() {
			return
		}
	}
	st.links = append(st.links, sc)
	st.span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{AttrHolderOwner.String(h.Owner), AttrHolderFencingToken.Int64(h.Token)}})
}

// AcquireEnd ends lock.acquire with the outcome and, on success, starts
// lock.hold as its sibling (a child of the caller's span): the returned
// context becomes the lease's.
func (o *observer) AcquireEnd(ctx context.Context, a core.AcquireInfo, r core.AcquireResult) context.Context {
	outcome := r.Outcome.String()
	var et string
	if r.Outcome != core.OutcomeAcquired && r.Outcome != core.OutcomeReplayed {
		et = outcome // the outcome is the error's class: one taxonomy
	}
	o.m.pending.Add(ctx, -1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", "").add...)
	mo := o.m.attrs.get(a.Name, kindOf(a.Kind), outcome, et)
	o.m.acquisitions.Add(ctx, 1, mo.add...)
	o.m.acquireDur.Record(ctx, r.Waited.Seconds(), mo.rec...)
	if r.TakenOver {
		o.m.takeovers.Add(ctx, 1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", "").add...)
	}

	// base is what the lease's context builds on: ctx itself, so that what
	// other Observers beside this one (core.Observers) put in the acquire's
	// context is still there in the lease's events, with the request's span
	// (lock.acquire's parent) current again instead of the ended
	// lock.acquire.
	base := ctx
	if st := acquireFrom(ctx); st != nil {
		if r.Outcome == core.OutcomeAcquired {
			base = trace.ContextWithSpan(ctx, trace.SpanFromContext(st.parent))
		}
		if st.span.IsRecording() {
			switch {
			case r.Outcome == core.OutcomeAcquired && r.Handoff:
				st.span.SetAttributes(AttrOutcome.String(outcome), AttrAttempts.Int(r.Attempts), AttrFencingToken.Int64(r.Token), AttrHandoff.Bool(true))
			case r.Outcome == core.OutcomeAcquired && r.TakenOver:
				st.span.SetAttributes(AttrOutcome.String(outcome), AttrAttempts.Int(r.Attempts), AttrFencingToken.Int64(r.Token), AttrTakenOver.Bool(true))
			case r.Outcome == core.OutcomeAcquired, r.Outcome == core.OutcomeReplayed:
				// A replay's token is the one of the claim that stored the answer.
				st.span.SetAttributes(AttrOutcome.String(outcome), AttrAttempts.Int(r.Attempts), AttrFencingToken.Int64(r.Token))
			default:
				st.span.SetAttributes(AttrOutcome.String(outcome), AttrAttempts.Int(r.Attempts), AttrErrorType.String(et))
				if acquireFailed(r.Outcome) {
					st.span.SetStatus(codes.Error, o.describe(r.Err, et))
				}
			}
		}
		st.span.End()
	}
	if r.Outcome != core.OutcomeAcquired {
		return ctx
	}
	o.m.held.Add(ctx, 1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", "").add...)
	if !o.cfg.holdSpan {
		return base
	}
	hctx, span := o.tracer.Start(base, SpanHold, o.spanOpts...)
	if span.IsRecording() {
		o.setLockAttrs(span, a.Name, a.Key, a.Owner, AttrKind.String(kindOf(a.Kind)), AttrFencingToken.Int64(r.Token))
	} else if !span.SpanContext().IsValid() {
		// A no-op span (no provider): nothing to end or to parent to, and
		// the caller's span stays the current one.
		return base
	}
	return &holdCtx{Context: hctx, span: span}
}

// kindOf is an acquire's or a lease's kind; an AcquireInfo or LeaseInfo
// built by hand without one is a mutex.
func kindOf(kind string) string {
	if kind == "" {
		return core.KindMutex
	}
	return kind
}

// acquireFailed: an acquire that ended so is the lock's failure to do its
// job (status Error): Redis unavailable, a misconfigured server, a key the
// request could not give, a Client closed under it. The others — held by
// another owner (contended, timeout; a claim in progress elsewhere), the
// caller's context ended (canceled, deadline_exceeded), an idempotency
// key used for another request (mismatch, the client's mistake) — are the
// service's own policy or its caller's decision: error.type says which,
// the status stays Unset and the request's span carries the request's
// status. A replayed answer is no error at all.
func acquireFailed(o core.Outcome) bool {
	switch o {
	case core.OutcomeAcquired, core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLimited, core.OutcomeCanceled, core.OutcomeDeadline,
		core.OutcomeReplayed, core.OutcomeMismatch:
		return false
	}
	return true
}

// Renewed counts the renewal round by outcome and adds an event to lock.hold.
func (o *observer) Renewed(ctx context.Context, l core.LeaseInfo, err error) {
	outcome, et := RenewOK, ""
	if err != nil {
		outcome, et = RenewError, errorType(err)
		if errors.Is(err, core.ErrLost) {
			outcome = RenewLost
		}
	}
	o.m.renewals.Add(ctx, 1, o.m.attrs.get(l.Name, kindOf(l.Kind), outcome, et).add...)
	if span := holdFrom(ctx); span != nil && span.IsRecording() {
		if err == nil {
			span.AddEvent(EventRenewed, trace.WithAttributes(AttrOutcome.String(outcome)))
		} else {
			span.AddEvent(EventRenewed, trace.WithAttributes(AttrOutcome.String(outcome), AttrErrorType.String(et)))
		}
	}
}

// Lost ends lock.hold with status Error and error.type lost (closed when the
// Client was closed under the lease), and counts the loss.
func (o *observer) Lost(ctx context.Context, l core.LeaseInfo, cause error) {
	et := errorType(cause)
	if et == "" {
		et = "lost"
	}
	o.leaseEnded(ctx, l, et)
	o.m.losses.Add(ctx, 1, o.m.attrs.get(l.Name, kindOf(l.Kind), "", et).add...)
	if span := holdFrom(ctx); span != nil {
		span.SetAttributes(AttrErrorType.String(et))
		span.SetStatus(codes.Error, o.describe(cause, et))
		span.End()
	}
}

// Released ends lock.hold; a release that failed (the lock had expired on
// the server, or Redis did not answer) sets status Error.
func (o *observer) Released(ctx context.Context, l core.LeaseInfo, err error) {
	et := errorType(err)
	o.leaseEnded(ctx, l, et)
	if span := holdFrom(ctx); span != nil {
		if err != nil {
			span.SetAttributes(AttrErrorType.String(et))
			span.SetStatus(codes.Error, o.describe(err, et))
		}
		span.End()
	}
}

func (o *observer) leaseEnded(ctx context.Context, l core.LeaseInfo, et string) {
	o.m.held.Add(ctx, -1, o.m.attrs.get(l.Name, kindOf(l.Kind), "", "").add...)
	o.m.holdDur.Record(ctx, l.Held.Seconds(), o.m.attrs.get(l.Name, kindOf(l.Kind), "", et).rec...)
}

// Unlocked counts a handler that ran without the lock (fail-open) and marks
// it on the request's span.
func (o *observer) Unlocked(ctx context.Context, a core.AcquireInfo, err error) {
	et := errorType(err)
	o.m.unlocked.Add(ctx, 1, o.m.attrs.get(a.Name, kindOf(a.Kind), "", et).add...)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		kv := []attribute.KeyValue{AttrErrorType.String(et)}
		if a.Name != "" {
			kv = append(kv, AttrName.String(a.Name))
		}
		span.AddEvent(EventUnlocked, trace.WithAttributes(kv...))
	}
}

// describe is a span status description. Engine errors name the key, so
// unless keys are recorded raw the description is built without it.
func (o *observer) describe(err error, et string) string {
	if err == nil {
		return et
	}
	if o.cfg.keyMode == KeyRaw {
		return err.Error()
	}
	var ue *core.UnavailableError
	if errors.As(err, &ue) && ue.Err != nil {
		return "redis unavailable: " + ue.Err.Error()
	}
	switch et {
	case "timeout":
		return "lock held by another owner past the wait budget"
	case "contended":
		return "lock held by another owner"
	case "canceled":
		return "context canceled while waiting for the lock"
	case "deadline_exceeded":
		return "context deadline exceeded while waiting for the lock"
	case "lost":
		return "lease lost"
	case "closed":
		return "client closed"
	case "not_held":
		return "lease no longer held at release (expired or removed on the server)"
	}
	return et
}
