// Package adapttest holds what every lockkit adapter's tests share: the
// option cases (OptionCases) run through one adapter's constructor,
// and the benchmark of what an adapter adds to a core cycle, so each is
// written once.
package adapttest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
)

// RunOptionCases builds the adapter once per case with build, which returns
// what construction said: nil when it succeeded, else its error (or its
// panic, through Panic). A refused case must be refused with a message
// that starts with prefix (e.g. "ginlock: New: ") and names the rule.
func RunOptionCases(t *testing.T, prefix string, build func(tc OptionCase) error) {
	t.Helper()
	for _, tc := range OptionCases {
		t.Run(tc.Name, func(t *testing.T) {
			err := build(tc)
			switch {
			case tc.Err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.Err != "" && err == nil:
				t.Fatalf("accepted, want refused saying %q", tc.Err)
			case tc.Err != "" && (!strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.Err)):
				t.Fatalf("refused with %q, want %q...%q", err, prefix, tc.Err)
			}
		})
	}
}

// Panic runs f and returns its panic as an error (nil when it returned).
func Panic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

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

// KindOptions are an adapter's options for tc's Limit, read/write side
// and extra keys, from the adapter's own constructors (read and write may
// be nil for an adapter without that side).
func KindOptions[O any](tc OptionCase, limit func(int) O, read, write, extraKey func() O) []O {
	var opts []O
	if tc.Limit != 0 {
		opts = append(opts, limit(tc.Limit))
	}
	switch {
	case tc.Side == core.ReadSide && read != nil:
		opts = append(opts, read())
	case tc.Side == core.WriteSide && write != nil:
		opts = append(opts, write())
	}
	for range tc.Keys - 1 {
		opts = append(opts, extraKey())
	}
	return opts
}
