package otellock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var (
	name    = otellock.AttrName.String
	outcome = otellock.AttrOutcome.String
	errType = otellock.AttrErrorType.String
	kind    = otellock.AttrKind.String
	mutex   = kind(core.KindMutex)
)

// Every instrument counts what happened, with lockkit.lock.name,
// lockkit.lock.kind, outcome and error.type as its only attributes: never
// the key, even with KeyRaw.
func TestMetrics(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t, otellock.WithKeyAttribute(otellock.KeyRaw))
	tp := newTap(tel.obs)
	c := newClient(t, srv, core.WithObserver(tp), core.WithTTL(time.Second))
	other := newClient(t, srv, core.WithObserver(tp))
	ctx := testkit.Context(t, 60*time.Second)
	var keys []string
	key := func(k string) string { keys = append(keys, k); return k }

	// Three uncontended cycles of "GET /a"; while one is held, held = 1.
	for i := range 3 {
		l, err := c.Acquire(ctx, key("secret-a:"+string(rune('0'+i))), core.Name("GET /a"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			m := tel.collect(t)
			if v := sumOf(t, m, otellock.MetricHeld, name("GET /a"), mutex); v != 1 {
				t.Fatalf("held while holding = %d, want 1", v)
			}
			if v := sumOf(t, m, otellock.MetricPending, name("GET /a"), mutex); v != 0 {
				t.Fatalf("pending after acquire = %d, want 0", v)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// "B": a timeout, a NoWait refusal and a cancelled wait behind another holder.
	hl, err := other.Acquire(ctx, key("secret-b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "secret-b", core.Name("B"), core.Wait(200*time.Millisecond)); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := c.Acquire(ctx, "secret-b", core.Name("B"), core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("nowait: %v", err)
	}
	drain(tp.contended)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Acquire(cctx, "secret-b", core.Name("B"))
		done <- err
	}()
	testkit.Recv(t, tp.contended, 10*time.Second, "the cancelled waiter's contention")
	if v := sumOf(t, tel.collect(t), otellock.MetricPending, name("B"), mutex); v != 1 {
		t.Fatalf("pending while waiting = %d, want 1", v)
	}
	cancel()
	if err := testkit.Recv(t, done, 10*time.Second, "the cancelled acquire"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// "R": a renewed lease; "L": a lost one.
	drain(tp.renewed)
	rl, err := c.Acquire(ctx, key("secret-r"), core.Name("R"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, tp.renewed, 10*time.Second, "a renewal"); err != nil {
		t.Fatal(err)
	}
	if err := rl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ll, err := c.Acquire(ctx, key("secret-l"), core.Name("L"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.Del(ctx, "lockkit:v1:k:secret-l").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, ll.Done(), 10*time.Second, "ll.Done()")
	testkit.WaitFor(t, 10*time.Second, "the loss to be counted", func() bool {
		return sumOf(t, tel.collect(t), otellock.MetricLosses, name("L"), mutex, errType("lost")) == 1
	})

	// "U": an adapter ran a handler unlocked (fail-open).
	tel.obs.Unlocked(ctx, core.AcquireInfo{Key: key("secret-u"), Name: "U"},
		&core.UnavailableError{Op: "acquire", Key: "secret-u", Err: errors.New("connection refused")})

	m := tel.collect(t)
	checks := []struct {
		metric string
		kv     []attribute.KeyValue
		want   int64
	}{
		{otellock.MetricAcquisitions, []attribute.KeyValue{mutex, name("GET /a"), outcome("acquired")}, 3},
		{otellock.MetricAcquisitions, []attribute.KeyValue{mutex, name("B"), outcome("timeout"), errType("timeout")}, 1},
		{otellock.MetricAcquisitions, []attribute.KeyValue{mutex, name("B"), outcome("contended"), errType("contended")}, 1},
		{otellock.MetricAcquisitions, []attribute.KeyValue{mutex, name("B"), outcome("canceled"), errType("canceled")}, 1},
		{otellock.MetricAcquisitions, []attribute.KeyValue{mutex, outcome("acquired")}, 1}, // the other client's, no name
		{otellock.MetricHeld, []attribute.KeyValue{mutex, name("GET /a")}, 0},
		{otellock.MetricHeld, []attribute.KeyValue{mutex, name("R")}, 0},
		{otellock.MetricHeld, []attribute.KeyValue{mutex, name("L")}, 0},
		{otellock.MetricPending, []attribute.KeyValue{mutex, name("B")}, 0},
		{otellock.MetricLosses, []attribute.KeyValue{mutex, name("L"), errType("lost")}, 1},
		{otellock.MetricRenewals, []attribute.KeyValue{mutex, name("L"), outcome("lost"), errType("lost")}, 1},
		{otellock.MetricUnlocked, []attribute.KeyValue{mutex, name("U"), errType("unavailable")}, 1},
	}
	for _, ck := range checks {
		if got := sumOf(t, m, ck.metric, ck.kv...); got != ck.want {
			t.Errorf("%s%v = %d, want %d", ck.metric, ck.kv, got, ck.want)
		}
	}
	if got := sumOf(t, m, otellock.MetricRenewals, name("R"), mutex, outcome("ok")); got < 1 {
		t.Errorf("renewals{R,ok} = %d, want ≥ 1", got)
	}
	// Contentions: ≥ 1 for the timeout, 1 for NoWait, ≥ 1 for the cancelled wait.
	if got := sumOf(t, m, otellock.MetricContentions, name("B"), mutex); got < 3 {
		t.Errorf("contentions{B} = %d, want ≥ 3", got)
	}
	if n, sum := histCount(t, m, otellock.MetricAcquireDuration, name("GET /a"), mutex, outcome("acquired")); n != 3 || sum <= 0 || sum > 30 {
		t.Errorf("acquire.duration{GET /a, acquired} count %d sum %vs", n, sum)
	}
	if n, sum := histCount(t, m, otellock.MetricAcquireDuration, name("B"), mutex, outcome("timeout"), errType("timeout")); n != 1 || sum < 0.2 {
		t.Errorf("acquire.duration{B, timeout} count %d sum %vs, want 1 of ≥ 0.2s", n, sum)
	}
	if n, _ := histCount(t, m, otellock.MetricHoldDuration, name("GET /a"), mutex); n != 3 {
		t.Errorf("hold.duration{GET /a} count %d, want 3", n)
	}
	if n, _ := histCount(t, m, otellock.MetricHoldDuration, name("L"), mutex, errType("lost")); n != 1 {
		t.Errorf("hold.duration{L, lost} count %d, want 1", n)
	}

	allowed := map[attribute.Key]bool{otellock.AttrName: true, otellock.AttrKind: true, otellock.AttrOutcome: true, otellock.AttrErrorType: true}
	sets := attrSets(m)
	for _, metric := range []string{
		otellock.MetricAcquireDuration, otellock.MetricHoldDuration, otellock.MetricContentions,
		otellock.MetricAcquisitions, otellock.MetricRenewals, otellock.MetricLosses,
		otellock.MetricHeld, otellock.MetricPending, otellock.MetricUnlocked,
	} {
		if len(sets[metric]) == 0 {
			t.Errorf("metric %s not recorded", metric)
		}
		for _, s := range sets[metric] {
			for _, kv := range s.ToSlice() {
				if !allowed[kv.Key] {
					t.Errorf("%s has attribute %s", metric, kv.Key)
				}
				for _, k := range keys {
					if strings.Contains(kv.Value.Emit(), k) {
						t.Errorf("%s attribute %s carries the key %q", metric, kv.Key, k)
					}
				}
			}
		}
	}
	if len(sets) != 9 {
		t.Errorf("%d metrics recorded, want 9", len(sets))
	}
}

func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// One lock name with two sides (GET and PUT of one route share a
// read/write lock): readers and writers are two series of every metric,
// told apart by lockkit.lock.kind, and a semaphore's permits a third.
func TestKindSplitsSeries(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)
	const route = "/tenant/settings"
	acquires := []struct {
		kind string
		n    int
		get  func() (*core.Lease, error)
	}{
		{core.KindRead, 3, func() (*core.Lease, error) { return c.RWLock("settings:t1").RLock(ctx, core.Name(route)) }},
		{core.KindWrite, 2, func() (*core.Lease, error) { return c.RWLock("settings:t1").Lock(ctx, core.Name(route)) }},
		{core.KindSemaphore, 1, func() (*core.Lease, error) { return c.Semaphore("export:t1", 2).Acquire(ctx, core.Name(route)) }},
	}
	for _, a := range acquires {
		for range a.n {
			l, err := a.get()
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := tel.collect(t)
	for _, a := range acquires {
		if got := sumOf(t, m, otellock.MetricAcquisitions, name(route), kind(a.kind), outcome("acquired")); got != int64(a.n) {
			t.Errorf("acquisitions{%s, %s} = %d, want %d", route, a.kind, got, a.n)
		}
		if n, _ := histCount(t, m, otellock.MetricHoldDuration, name(route), kind(a.kind)); n != uint64(a.n) {
			t.Errorf("hold.duration{%s, %s} count %d, want %d", route, a.kind, n, a.n)
		}
	}
}

// The histograms' buckets resolve a lock by default: from 100 µs to tens
// of seconds, no bucket wider than a factor 1.5, so a quantile read from
// them is within 1.5 of the true one; holds go on to an hour.
func TestHistogramBuckets(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "b", core.Name("B"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m := tel.collect(t)
	for _, tc := range []struct {
		metric   string
		min, max float64
	}{
		{otellock.MetricAcquireDuration, 0.0001, 68},
		{otellock.MetricHoldDuration, 0.0001, 3600},
	} {
		h, ok := m[tc.metric].(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) == 0 {
			t.Fatalf("%s: %T", tc.metric, m[tc.metric])
		}
		b := h.DataPoints[0].Bounds
		if len(b) == 0 || b[0] != tc.min || b[len(b)-1] != tc.max {
			t.Errorf("%s bounds %v: want %v to %v", tc.metric, b, tc.min, tc.max)
			continue
		}
		for i := 1; i < len(b) && b[i] <= 68; i++ {
			if r := b[i] / b[i-1]; r > 1.5+1e-9 {
				t.Errorf("%s: bucket (%v, %v] is %.2f wide, more than 1.5", tc.metric, b[i-1], b[i], r)
			}
		}
	}
}
