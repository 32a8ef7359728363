package otellock_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
	"github.com/lockkit/lockkit/otellock"
)

// The Observer on a Client, with the tracer and meter providers given
// explicitly (without them, New takes the global ones). Here the SDK
// records in memory; a service exports with sdktrace.WithBatcher(exporter)
// and a periodic metric reader.
func ExampleNew() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	metrics := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics))
	defer mp.Shutdown(ctx)

	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	locks, err := core.New(rdb, core.WithObserver(otellock.New(
		otellock.WithTracerProvider(tp),
		otellock.WithMeterProvider(mp),
	)))
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	// The adapters name each acquire after the route or RPC; core.Name does it here.
	err = locks.Do(ctx, "order:42", func(ctx context.Context) error { return nil }, core.Name("POST /orders/:id/pay"))
	if err != nil {
		panic(err)
	}

	for _, s := range spans.Ended() {
		fmt.Println("span", s.Name())
	}
	var rm metricdata.ResourceMetrics
	if err := metrics.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == otellock.MetricAcquisitions {
				outcome, _ := sum.DataPoints[0].Attributes.Value(otellock.AttrOutcome)
				fmt.Println("metric", m.Name, outcome.AsString(), sum.DataPoints[0].Value)
			}
		}
	}
	// Output:
	// span lock.acquire
	// span lock.hold
	// metric lockkit.lock.acquisitions acquired 1
}
