package otellock_test

import (
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
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
			// WithPropagators(nil) after newTelemetry's W3C: the global one.
			holder := newTelemetry(t, append([]otellock.Option{otellock.WithPropagators(nil)}, tc.opts...)...)
			waiter := newTelemetry(t, otellock.WithPropagators(nil))
			holderC := newClient(t, srv, core.WithObserver(holder.obs))
			waiterTap := newTap(waiter.obs)
			waiterC := newClient(t, srv, core.WithObserver(waiterTap))

			hctx, hreq := holder.request(ctx, "holder request")
			hl, err := holderC.Acquire(hctx, "order:9")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				wctx, wreq := waiter.request(ctx, "waiter request")
				defer wreq.End()
				l, err := waiterC.Acquire(wctx, "order:9", core.Wait(20*time.Second))
				if err == nil {
					err = l.Release(ctx)
				}
				done <- err
			}()
			if h := testkit.Recv(t, waiterTap.contended, 10*time.Second, "the waiter meeting the holder"); h.Metadata == "" {
				t.Errorf("the holder stored no metadata: %+v", h)
			}
			if err := hl.Release(ctx); err != nil {
				t.Fatal(err)
			}
			hreq.End()
			if err := testkit.Recv(t, done, 10*time.Second, "the waiter's acquire"); err != nil {
				t.Fatal(err)
			}
			acq := waiter.one(t, otellock.SpanAcquire)
			if links := acq.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != hreq.SpanContext().SpanID() || links[0].SpanContext.TraceID() != hreq.SpanContext().TraceID() {
				t.Errorf("waiter's links %+v, want one to the holder's request span %v", links, hreq.SpanContext())
			}
		})
	}
}
