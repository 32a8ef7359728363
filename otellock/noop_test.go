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
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// With nothing configured (no-op global providers and propagator; no test
// in this package sets the globals) the observer records nothing and every
// path of the engine still works: acquire, contention, timeout, renewal,
// loss, release, Do, and an adapter's Unlocked.
func TestNoProviderConfigured(t *testing.T) {
	if _, ok := otel.GetTracerProvider().Tracer("x").Start(context.Background(), "x"); ok.IsRecording() {
		t.Fatal("the global TracerProvider records: another test set it")
	}
	srv := redistest.Start(t)
	obs := newTap(otellock.New())
	c := newClient(t, srv, core.WithObserver(obs), core.WithTTL(time.Second))
	other := newClient(t, srv, core.WithObserver(otellock.New()))
	ctx := testkit.Context(t, 30*time.Second)

	l, err := c.Acquire(ctx, "noop:1", core.Name("n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc := trace.SpanFromContext(l.Context()).SpanContext(); sc.IsValid() {
		t.Fatalf("lease context carries a valid span %v with no provider", sc)
	}
	h, held, err := c.Inspect(ctx, "noop:1")
	if err != nil || !held || h.Metadata != "" {
		t.Fatalf("Inspect = %+v %v %v, want held with no metadata", h, held, err)
	}
	if _, err := other.Acquire(ctx, "noop:1", core.Wait(100*time.Millisecond)); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("timeout: %v", err)
	}
	if err := testkit.Recv(t, obs.renewed, 10*time.Second, "a renewal"); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "noop:2", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	lost, err := c.Acquire(ctx, "noop:3")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.Del(ctx, "lockkit:v1:k:noop:3").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, lost.Done(), 10*time.Second, "lost.Done()")
	obs.Unlocked(ctx, core.AcquireInfo{Key: "noop:4"}, core.ErrUnavailable)
}

// A request that arrives with a remote parent but no local provider (a
// proxy's traceparent, no SDK): the holder still stores that context, so
// a waiter with tracing on links to the upstream trace.
func TestNoProviderKeepsRemoteParent(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithObserver(otellock.New(otellock.WithPropagators(traceContext))))
	ctx := testkit.Context(t, 20*time.Second)
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	l, err := c.Acquire(trace.ContextWithRemoteSpanContext(ctx, remote), "noop:remote")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	h, _, err := c.Inspect(ctx, "noop:remote")
	if err != nil {
		t.Fatal(err)
	}
	if want := "traceparent=00-" + remote.TraceID().String() + "-" + remote.SpanID().String() + "-01"; h.Metadata != want {
		t.Fatalf("metadata %q, want %q", h.Metadata, want)
	}
}
