// Package adapttest holds the benchmark of what a lockkit adapter adds to
// a core cycle, written once for every adapter's tests. (The option cases
// and the behaviour every adapter shares are the public
// testing/conformance.)
package adapttest

import (
	"context"
	"testing"

	"github.com/lockkit/lockkit/core"
)

// Overhead benchmarks one adapter's request and reports, per request, the
// allocations the adapter adds to a core cycle: request − route − cycle,
// where route is the same request without the middleware and cycle is what
// the adapter asks of core (Acquire with its settings, Bind, Release), done
// directly. b's own allocs/op are the whole request's.
func Overhead(b *testing.B, request, route, cycle func()) {
	b.Helper()
	const runs = 300
	routeAllocs := testing.AllocsPerRun(runs, route)
	cycleAllocs := testing.AllocsPerRun(runs, cycle)
	reqAllocs := testing.AllocsPerRun(runs, request)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		request()
	}
	b.ReportMetric(reqAllocs-routeAllocs-cycleAllocs, "adds-allocs/op")
	b.ReportMetric(cycleAllocs, "core-allocs/op")
	b.ReportMetric(routeAllocs, "route-allocs/op")
}

// CoreCycle is the core cycle an HTTP or RPC adapter runs for one request
// on the key of parts: Acquire with a wait budget and a telemetry name,
// Bind to the request's context, Release detached from it.
func CoreCycle(b *testing.B, c *core.Client, parts ...string) func() {
	key, err := core.JoinKey(parts...)
	if err != nil {
		b.Fatal(err)
	}
	opts := []core.AcquireOption{core.Wait(core.DefaultWait), core.Name("bench")}
	return func() {
		ctx := context.Background()
		l, err := c.Acquire(ctx, key, opts...)
		if err != nil {
			b.Fatal(err)
		}
		_, stop := l.Bind(ctx)
		stop()
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			b.Fatal(err)
		}
	}
}
