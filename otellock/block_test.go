package otellock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// gate blocks every export until it is opened, and says when the first
// export is stuck in it.
type gate struct {
	entered  chan struct{}
	open     chan struct{}
	once     sync.Once
	exported atomic.Int64
}

func newGate() *gate { return &gate{entered: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) wait(ctx context.Context) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type blockingSpanExporter struct{ *gate }

func (e blockingSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.wait(ctx); err != nil {
		return err
	}
	e.exported.Add(int64(len(spans)))
	return nil
}
func (blockingSpanExporter) Shutdown(context.Context) error { return nil }

type blockingMetricExporter struct{ *gate }

func (blockingMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (blockingMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (e blockingMetricExporter) Export(ctx context.Context, _ *metricdata.ResourceMetrics) error {
	if err := e.wait(ctx); err != nil {
		return err
	}
	e.exported.Add(1)
	return nil
}
func (blockingMetricExporter) ForceFlush(context.Context) error { return nil }
func (blockingMetricExporter) Shutdown(context.Context) error   { return nil }

// Observer calls never wait for exporters. With a batching span processor
// and a periodic metric reader whose exporters are both stuck, hundreds of
// acquire/release cycles, a contended wait, a renewal (renewal goroutine)
// and a loss (scheduler goroutine ends lock.hold) all complete: spans that
// do not fit the processor's queue are dropped, never waited for.
func TestStuckExporterDoesNotBlockEngine(t *testing.T) {
	spans, metrics := newGate(), newGate()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(blockingSpanExporter{spans},
			sdktrace.WithMaxQueueSize(4), sdktrace.WithMaxExportBatchSize(1), sdktrace.WithBatchTimeout(time.Millisecond)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(
		sdkmetric.NewPeriodicReader(blockingMetricExporter{metrics}, sdkmetric.WithInterval(5*time.Millisecond))))
	defer func() {
		close(spans.open)
		close(metrics.open)
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	}()
	obs := newTap(otellock.New(otellock.WithTracerProvider(tp), otellock.WithMeterProvider(mp), otellock.WithPropagators(traceContext)))

	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithObserver(obs), core.WithTTL(time.Second))
	other := newClient(t, srv, core.WithObserver(obs))
	ctx := testkit.Context(t, 60*time.Second)
	cycle := func(key string) {
		t.Helper()
		l, err := c.Acquire(ctx, key, core.Name("cycle"))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle("block:0")
	testkit.Recv(t, spans.entered, 10*time.Second, "the span exporter to be stuck")
	testkit.Recv(t, metrics.entered, 10*time.Second, "the metric exporter to be stuck")

	const n = 200
	for range n {
		cycle("block:1")
	}
	// A contended wait with a holder link, while nothing can be exported.
	hl, err := other.Acquire(ctx, "block:2")
	if err != nil {
		t.Fatal(err)
	}
	drain(obs.contended)
	done := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, "block:2", core.Wait(20*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		done <- err
	}()
	testkit.Recv(t, obs.contended, 10*time.Second, "contention")
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, done, 10*time.Second, "the waiter"); err != nil {
		t.Fatal(err)
	}
	// A renewal, then a loss ended by the engine's own goroutines.
	drain(obs.renewed)
	l, err := c.Acquire(ctx, "block:3")
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, obs.renewed, 10*time.Second, "a renewal"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.Del(ctx, "lockkit:v1:k:block:3").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, l.Done(), 10*time.Second, "the loss")

	if got := spans.exported.Load() + metrics.exported.Load(); got != 0 {
		t.Fatalf("%d exports went through; the exporters were meant to be stuck", got)
	}
	select {
	case <-spans.open:
		t.Fatal("gate opened early")
	default:
	}
	t.Logf("%d acquire/release cycles, a contended wait and a loss done with both exporters stuck", n+1)
}

// The contrast, and why the package doc asks for a batching processor: a
// SimpleSpanProcessor exports inside span.End, so a stuck exporter holds
// Acquire inside the Observer's AcquireEnd until it lets go.
func TestSimpleSpanProcessorExportsInline(t *testing.T) {
	g := newGate()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(blockingSpanExporter{g})))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithObserver(otellock.New(otellock.WithTracerProvider(tp))))
	ctx := testkit.Context(t, 20*time.Second)
	done := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, "simple:1")
		if err == nil {
			err = l.Release(ctx)
		}
		done <- err
	}()
	testkit.Recv(t, g.entered, 10*time.Second, "the exporter to be entered")
	select {
	case err := <-done:
		t.Fatalf("Acquire returned (%v) while lock.acquire's export was stuck", err)
	default: // Acquire is stuck in span.End: that is the SimpleSpanProcessor's doing
	}
	close(g.open)
	if err := testkit.Recv(t, done, 10*time.Second, "Acquire after the exporter let go"); err != nil {
		t.Fatal(err)
	}
}
