package otellock_test

import (
	"context"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/otellock"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// discard is a span processor that drops every span: the SDK's own cost
// without an exporter's.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }

// observers are the configurations compared: no observer at all, otellock
// on explicit no-op providers, on the (unset, no-op) globals, and on the
// real SDK (every span sampled, metrics aggregated, nothing exported).
func observers(b *testing.B) []struct {
	name string
	obs  core.Observer
} {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(discard{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return []struct {
		name string
		obs  core.Observer
	}{
		{"none", nil},
		{"otellock-noop", otellock.New(otellock.WithTracerProvider(tracenoop.NewTracerProvider()),
			otellock.WithMeterProvider(metricnoop.NewMeterProvider()), otellock.WithPropagators(traceContext))},
		{"otellock-globals", otellock.New()},
		{"otellock-sdk", otellock.New(otellock.WithTracerProvider(tp), otellock.WithMeterProvider(mp), otellock.WithPropagators(traceContext))},
	}
}

// BenchmarkCycle is one uncontended Acquire + Release against a real
// redis-server (two round trips), per observer configuration: the
// difference between rows is what the observer adds.
func BenchmarkCycle(b *testing.B) {
	srv := redistest.Start(b)
	for _, o := range observers(b) {
		b.Run(o.name, func(b *testing.B) {
			var opts []core.Option
			if o.obs != nil {
				opts = append(opts, core.WithObserver(o.obs))
			}
			c := newClient(b, srv, opts...)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l, err := c.Acquire(ctx, "bench:cycle", core.Name("bench"))
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkObserverCycle is the observer alone for one uncontended cycle
// (AcquireStart, HolderMetadata, AcquireEnd, Released), without Redis.
func BenchmarkObserverCycle(b *testing.B) {
	info := core.AcquireInfo{Key: "order:42", Name: "POST /orders/:id/pay", Strategy: "notify"}
	res := core.AcquireResult{Outcome: core.OutcomeAcquired, Attempts: 1, Token: 7}
	li := core.LeaseInfo{Key: info.Key, Name: info.Name, Token: 7}
	for _, o := range observers(b) {
		if o.obs == nil {
			continue
		}
		b.Run(o.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				actx := o.obs.AcquireStart(ctx, info)
				_ = o.obs.HolderMetadata(actx, info)
				hctx := o.obs.AcquireEnd(actx, info, res)
				o.obs.Released(hctx, li, nil)
			}
		})
	}
}
