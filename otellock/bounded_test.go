package otellock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

const (
	boundedNames   = 10_000 // distinct lock names, each with its own keys
	boundedWorkers = 32
	// sdkCardinality bounds the metric SDK's own series per instrument
	// (its default is 2000), so the heap measured below is otellock's.
	sdkCardinality = 50
)

// otelHeapTolerance is how much the live heap may grow while the observer
// records acquires under boundedNames names. The attribute set cache fills
// to its bound (otellock.MaxCachedSets sets of name, kind, outcome and
// error.type, about 430 bytes each: 1.7 MiB) and stays there; the SDK
// keeps at most sdkCardinality series per instrument (about 1.3 MiB with
// their exemplar reservoirs: a histogram keeps one exemplar per bucket,
// 37 and 42 of them). Without the bound the cache would keep three or four
// sets per name here, over 30,000 sets, about 13 MiB.
const otelHeapTolerance = 4 << 20

// Acquires under ten thousand distinct names (as a name taken from the
// request would give) leave the observer's attribute set cache at its bound
// and the live heap flat, and every measurement is still counted.
func TestBoundedCaches(t *testing.T) {
	srv := redistest.Start(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(sdkCardinality))
	// Spans are recorded (attributes, events, links) and dropped: no processor.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs := otellock.New(otellock.WithMeterProvider(mp), otellock.WithTracerProvider(tp),
		otellock.WithPropagators(propagation.TraceContext{}))
	c := newClient(t, srv, core.WithObserver(obs))
	other := newClient(t, srv, core.WithObserver(obs))
	ctx := testkit.Context(t, 2*time.Minute)

	// record measures under name: acquired and released, unlocked (as a
	// fail-open adapter reports), and for every fourth key refused by
	// another holder.
	var acquires atomic.Int64
	record := func(i int, name, key string) error {
		l, err := c.Acquire(ctx, key, core.Name(name))
		if err != nil {
			return err
		}
		acquires.Add(1)
		if err := l.Release(ctx); err != nil {
			return err
		}
		obs.Unlocked(ctx, core.AcquireInfo{Key: key, Name: name}, core.ErrUnavailable)
		if i%4 != 0 {
			return nil
		}
		lo, err := other.Acquire(ctx, key, core.Name(name))
		if err != nil {
			return err
		}
		acquires.Add(1)
		_, err = c.TryAcquire(ctx, key, core.Name(name))
		acquires.Add(1)
		if !errors.Is(err, core.ErrNotAcquired) {
			return fmt.Errorf("TryAcquire under a holder: %v", err)
		}
		return lo.Release(ctx)
	}
	// run records under n names (name(i), key(i)), boundedWorkers at a time.
	run := func(n int, name, key func(i int) string) error {
		var (
			next atomic.Int64
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for range boundedWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					if err := record(i, name(i), key(i)); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	// Warm up under four names, concurrently as the flood: the instruments,
	// the Redis connection pools and the SDK's first series exist before
	// the baseline.
	if err := run(400, func(i int) string { return fmt.Sprintf("warm %d", i%4) }, func(i int) string { return fmt.Sprintf("warm:%d", i) }); err != nil {
		t.Fatal(err)
	}
	warmSets := otellock.CachedSets(obs)
	heapBefore := testkit.LiveHeap()

	if err := run(boundedNames,
		func(i int) string { return fmt.Sprintf("POST /tenants/%d/pay", i) },
		func(i int) string { return fmt.Sprintf("tenant:%d", i) }); err != nil {
		t.Fatal(err)
	}

	if n := otellock.CachedSets(obs); n > otellock.MaxCachedSets {
		t.Fatalf("%d attribute sets cached after %d names, bound %d", n, boundedNames, otellock.MaxCachedSets)
	} else if n < otellock.MaxCachedSets {
		t.Fatalf("%d attribute sets cached after %d names: the cache never filled, so its bound was not exercised", n, boundedNames)
	}
	heapAfter := testkit.LiveHeap()
	growth := heapAfter - heapBefore
	t.Logf("cached sets %d → %d (bound %d); live heap %d → %d bytes (%+d; tolerance %d)",
		warmSets, otellock.CachedSets(obs), otellock.MaxCachedSets, heapBefore, heapAfter, growth, otelHeapTolerance)
	if growth > otelHeapTolerance {
		t.Fatalf("live heap grew by %d bytes over %d names, tolerance %d", growth, boundedNames, otelHeapTolerance)
	}

	// Sets built past the bound are used, not dropped: every acquire was
	// counted (under its name, or in the SDK's overflow series).
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != otellock.MetricAcquisitions {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				counted += p.Value
			}
		}
	}
	if counted != acquires.Load() {
		t.Fatalf("%s counted %d acquires, %d were made", otellock.MetricAcquisitions, counted, acquires.Load())
	}
}
