package otellock_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is one process's OpenTelemetry pipeline: a span recorder and a
// manual metric reader behind real SDK providers.
type telemetry struct {
	sr     *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	obs    core.Observer
}

func newTelemetry(t testing.TB, opts ...otellock.Option) *telemetry {
	t.Helper()
	tel := &telemetry{sr: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.sr), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	base := []otellock.Option{
		otellock.WithTracerProvider(tel.tp),
		otellock.WithMeterProvider(tel.mp),
		otellock.WithPropagators(propagation.TraceContext{}),
	}
	tel.obs = otellock.New(append(base, opts...)...)
	return tel
}

// request starts a server-like span standing for the request the lock is taken in.
func (tel *telemetry) request(ctx context.Context, name string) (context.Context, trace.Span) {
	return tel.tp.Tracer("test").Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}

// ended returns the ended spans called name.
func (tel *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.sr.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the single ended span called name, failing otherwise.
func (tel *telemetry) one(t testing.TB, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := tel.ended(name)
	if len(s) != 1 {
		t.Fatalf("%d ended %s spans, want 1 (all: %v)", len(s), name, spanNames(tel.sr.Ended()))
	}
	return s[0]
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name())
	}
	return n
}

// collect reads every metric now.
func (tel *telemetry) collect(t testing.TB) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otellock.ScopeName || sm.Scope.Version != otellock.Version {
			t.Fatalf("scope %q %q", sm.Scope.Name, sm.Scope.Version)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sumOf is the int64 sum's value at the data point whose attributes are
// exactly kv (0 when absent).
func sumOf(t testing.TB, data map[string]metricdata.Aggregation, name string, kv ...attribute.KeyValue) int64 {
	t.Helper()
	d, ok := data[name]
	if !ok {
		return 0
	}
	s, ok := d.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T, want Sum[int64]", name, d)
	}
	want := attribute.NewSet(kv...)
	for _, p := range s.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Value
		}
	}
	return 0
}

// histCount is the float64 histogram's count at the data point whose
// attributes are exactly kv, with its sum.
func histCount(t testing.TB, data map[string]metricdata.Aggregation, name string, kv ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	d, ok := data[name]
	if !ok {
		return 0, 0
	}
	h, ok := d.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T, want Histogram[float64]", name, d)
	}
	want := attribute.NewSet(kv...)
	for _, p := range h.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Count, p.Sum
		}
	}
	return 0, 0
}

// attrSets lists every data point's attribute set of every metric.
func attrSets(data map[string]metricdata.Aggregation) map[string][]attribute.Set {
	out := map[string][]attribute.Set{}
	for name, d := range data {
		switch d := d.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				out[name] = append(out[name], p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				out[name] = append(out[name], p.Attributes)
			}
		}
	}
	return out
}

func attrOf(kv []attribute.KeyValue, k attribute.Key) (attribute.Value, bool) {
	i := slices.IndexFunc(kv, func(a attribute.KeyValue) bool { return a.Key == k })
	if i < 0 {
		return attribute.Value{}, false
	}
	return kv[i].Value, true
}

func wantAttr(t testing.TB, span sdktrace.ReadOnlySpan, k attribute.Key, want any) {
	t.Helper()
	v, ok := attrOf(span.Attributes(), k)
	if !ok {
		t.Fatalf("%s: no attribute %s (have %v)", span.Name(), k, span.Attributes())
	}
	if got := v.AsInterface(); got != want {
		t.Fatalf("%s: %s = %v (%T), want %v (%T)", span.Name(), k, got, got, want, want)
	}
}

func newClient(t testing.TB, srv *redistest.Server, opts ...core.Option) *core.Client {
	t.Helper()
	return testkit.Client(t, srv.NewClient(), opts...)
}

// tap wraps an Observer and signals some events to the test, so it can wait
// for a contention or a renewal instead of sleeping.
type tap struct {
	core.Observer
	contended chan core.Holder
	renewed   chan error
}

func newTap(o core.Observer) *tap {
	return &tap{Observer: o, contended: make(chan core.Holder, 64), renewed: make(chan error, 64)}
}

func (t *tap) Contended(ctx context.Context, a core.AcquireInfo, h core.Holder, attempt int) {
	t.Observer.Contended(ctx, a, h, attempt)
	select {
	case t.contended <- h:
	default:
	}
}

func (t *tap) Renewed(ctx context.Context, l core.LeaseInfo, err error) {
	t.Observer.Renewed(ctx, l, err)
	select {
	case t.renewed <- err:
	default:
	}
}
