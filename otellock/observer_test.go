package otellock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var traceContext = propagation.TraceContext{}

func holderSC(b byte) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{b, 1}, SpanID: trace.SpanID{b, 2}, TraceFlags: trace.FlagsSampled,
	})
}

func metaFor(sc trace.SpanContext) string {
	return "traceparent=00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// One link per distinct holder, however often each is met; metadata that
// does not parse adds no link but the contention is still an event.
func TestOneLinkPerHolder(t *testing.T) {
	tel := newTelemetry(t)
	info := core.AcquireInfo{Key: "k", Name: "n", Strategy: "notify"}
	ctx := tel.obs.AcquireStart(context.Background(), info)
	a, b := holderSC(0xa), holderSC(0xb)
	for i, meta := range []string{metaFor(a), metaFor(a), metaFor(b), "garbage", "", metaFor(a), metaFor(b)} {
		tel.obs.Contended(ctx, info, core.Holder{Owner: "o", Metadata: meta, Token: int64(i)}, i+1)
	}
	tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeTimeout, Attempts: 7, Err: &core.NotAcquiredError{Key: "k"}})
	acq := tel.one(t, otellock.SpanAcquire)
	if n := len(acq.Events()); n != 7 {
		t.Fatalf("%d events, want 7", n)
	}
	links := acq.Links()
	if len(links) != 2 || links[0].SpanContext.SpanID() != a.SpanID() || links[1].SpanContext.SpanID() != b.SpanID() {
		t.Fatalf("links %+v, want a then b", links)
	}
}

// A grant that changed hands before it was taken (the queue's head gave
// up, the next caller of its Client took it under the same owner and
// token) is one contention, linked to both requests: the one the grant
// first named and the one that holds.
func TestGrantChangedHandsLinksTheHolder(t *testing.T) {
	tel := newTelemetry(t)
	info := core.AcquireInfo{Key: "k", Name: "n", Strategy: "notify"}
	ctx := tel.obs.AcquireStart(context.Background(), info)
	head, next := holderSC(0xa), holderSC(0xb)
	for i, meta := range []string{metaFor(head), metaFor(head), metaFor(next), metaFor(next), ""} {
		tel.obs.Contended(ctx, info, core.Holder{Owner: "replica-2", Metadata: meta, Token: 7}, i+1)
	}
	tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeTimeout, Attempts: 5, Err: &core.NotAcquiredError{Key: "k"}})
	acq := tel.one(t, otellock.SpanAcquire)
	if n := len(acq.Events()); n != 1 {
		t.Fatalf("%d events, want 1: one holder (owner and token)", n)
	}
	links := acq.Links()
	if len(links) != 2 || links[0].SpanContext.SpanID() != head.SpanID() || links[1].SpanContext.SpanID() != next.SpanID() {
		t.Fatalf("links %+v, want the head's request then the one that holds", links)
	}
}

// The holder metadata is the W3C traceparent of the acquiring request's
// span (lock.acquire's parent) and nothing else (no baggage); it stays
// within core.MaxMetadataLen, dropping whole fields that would not fit.
// Without a request span it is lock.acquire's own.
func TestHolderMetadata(t *testing.T) {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	tel := newTelemetry(t, otellock.WithPropagators(prop))
	bag, _ := baggage.Parse("user=alice")
	rctx, req := tel.request(baggage.ContextWithBaggage(context.Background(), bag), "request")
	defer req.End()
	info := core.AcquireInfo{Key: "k"}
	ctx := tel.obs.AcquireStart(rctx, info)
	meta := tel.obs.HolderMetadata(ctx, info)
	if want := metaFor(req.SpanContext()); meta != want {
		t.Fatalf("metadata %q, want the request's %q", meta, want)
	}
	bare := tel.obs.AcquireStart(context.Background(), info)
	if got, want := tel.obs.HolderMetadata(bare, info), metaFor(trace.SpanFromContext(bare).SpanContext()); got != want {
		t.Fatalf("metadata without a request span %q, want lock.acquire's %q", got, want)
	}
	tel.obs.AcquireEnd(bare, info, core.AcquireResult{Outcome: core.OutcomeUnavailable, Err: core.ErrUnavailable})
	if strings.Contains(meta, "alice") {
		t.Fatal("baggage stored in the holder metadata")
	}
	tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeUnavailable, Err: core.ErrUnavailable})

	// A tracestate too long for the limit is left out whole.
	ts, err := trace.ParseTraceState("a=" + strings.Repeat("x", 250) + ",b=" + strings.Repeat("y", 250) + ",c=" + strings.Repeat("z", 250) + ",d=" + strings.Repeat("w", 250))
	if err != nil {
		t.Fatal(err)
	}
	long := trace.ContextWithSpanContext(context.Background(), holderSC(1).WithTraceState(ts))
	ctx = tel.obs.AcquireStart(long, info)
	meta = tel.obs.HolderMetadata(ctx, info)
	if len(meta) > core.MaxMetadataLen || !strings.HasPrefix(meta, "traceparent=00-") || strings.Contains(meta, "tracestate") {
		t.Fatalf("metadata (%d bytes) %.80q...", len(meta), meta)
	}
	tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeUnavailable, Err: core.ErrUnavailable})
}

// Events for contexts the observer did not make (another observer's, an
// adapter's) are counted and never panic.
func TestForeignContexts(t *testing.T) {
	tel := newTelemetry(t)
	ctx := context.Background()
	info := core.AcquireInfo{Key: "k", Name: "n"}
	if m := tel.obs.HolderMetadata(ctx, info); m != "" {
		t.Fatalf("metadata %q", m)
	}
	tel.obs.Contended(ctx, info, core.Holder{Metadata: "traceparent=x"}, 1)
	hctx := tel.obs.AcquireEnd(ctx, info, core.AcquireResult{Outcome: core.OutcomeAcquired})
	li := core.LeaseInfo{Key: "k", Name: "n"}
	tel.obs.Renewed(ctx, li, nil)
	tel.obs.Lost(ctx, li, core.ErrLost)
	tel.obs.Released(ctx, li, nil)
	tel.obs.Unlocked(ctx, info, nil)
	tel.obs.Released(hctx, li, nil) // ends the lock.hold AcquireEnd started
	_, req := tel.request(ctx, "r")
	req.End()
	if got := len(tel.sr.Ended()); got != 2 { // request and the lock.hold AcquireEnd started
		t.Fatalf("%d spans: %v", got, spanNames(tel.sr.Ended()))
	}
}

// Unlocked (an adapter ran the handler without the lock, fail-open) marks
// the request's span with an event.
func TestUnlockedMarksRequestSpan(t *testing.T) {
	tel := newTelemetry(t)
	ctx, req := tel.request(context.Background(), "request")
	tel.obs.Unlocked(ctx, core.AcquireInfo{Key: "k", Name: "GET /x"}, &core.UnavailableError{Op: "acquire", Key: "k", Err: context.DeadlineExceeded})
	req.End()
	evs := tel.one(t, "request").Events()
	if len(evs) != 1 || evs[0].Name != otellock.EventUnlocked {
		t.Fatalf("events %+v", evs)
	}
	if v, _ := attrOf(evs[0].Attributes, otellock.AttrErrorType); v.AsString() != "unavailable" {
		t.Fatalf("error.type %q", v.AsString())
	}
}
