package otellock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Holder links need no propagator: otellock wired with a TracerProvider
// alone, the global propagator left as the no-op it is by default (or a
// propagator that carries no span context, such as Baggage), still stores
// the holder's span context with the lock, and the waiter's lock.acquire
// links to the holder's request span.
func TestHolderLinkWithoutPropagator(t *testing.T) {
	if f := otel.GetTextMapPropagator().Fields(); len(f) != 0 {
		t.Fatalf("a global propagator is set (fields %v): this test needs the default", f)
	}
	for _, tc := range []struct {
		name string
		opts []otellock.Option
	}{
		{"global no-op", nil},
		{"baggage only", []otellock.Option{otellock.WithPropagators(propagation.Baggage{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := testkit.Context(t, 30*time.Second)
			provider := func() (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
				sr := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
				t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				return tp, sr
			}
			holderTP, _ := provider()
			waiterTP, waiterSR := provider()
			holderC := newClient(t, srv, core.WithObserver(otellock.New(append([]otellock.Option{otellock.WithTracerProvider(holderTP)}, tc.opts...)...)))
			waiterTap := newTap(otellock.New(otellock.WithTracerProvider(waiterTP)))
			waiterC := newClient(t, srv, core.WithObserver(waiterTap))

			hctx, hreq := holderTP.Tracer("test").Start(ctx, "holder request", trace.WithSpanKind(trace.SpanKindServer))
			hl, err := holderC.Acquire(hctx, "order:9")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				wctx, wreq := waiterTP.Tracer("test").Start(ctx, "waiter request", trace.WithSpanKind(trace.SpanKindServer))
				defer wreq.End()
				l, err := waiterC.Acquire(wctx, "order:9", core.Wait(20*time.Second))
				if err == nil {
					err = l.Release(ctx)
				}
				done <- err
			}()
			if h := recv(t, waiterTap.contended, 10*time.Second, "the waiter meeting the holder"); h.Metadata == "" {
				t.Errorf("the holder stored no metadata: %+v", h)
			}
			if err := hl.Release(ctx); err != nil {
				t.Fatal(err)
			}
			hreq.End()
			if err := recv(t, done, 10*time.Second, "the waiter's acquire"); err != nil {
				t.Fatal(err)
			}
			var acq sdktrace.ReadOnlySpan
			for _, s := range waiterSR.Ended() {
				if s.Name() == otellock.SpanAcquire {
					acq = s
				}
			}
			if acq == nil {
				t.Fatal("no lock.acquire of the waiter")
			}
			if links := acq.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != hreq.SpanContext().SpanID() || links[0].SpanContext.TraceID() != hreq.SpanContext().TraceID() {
				t.Errorf("waiter's links %+v, want one to the holder's request span %v", links, hreq.SpanContext())
			}
		})
	}
}
