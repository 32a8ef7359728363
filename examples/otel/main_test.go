package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/sdk/trace"
	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// TestMain is the program itself when MainHidesSecrets runs it.
func TestMain(m *testing.M) {
	exampletest.AsMain(main)
	goleak.VerifyTestMain(m)
}

func noOTLP(t *testing.T) {
	for _, v := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "REDIS_URL"} {
		t.Setenv(v, "")
	}
}

func runExample(t *testing.T) (*result, string) {
	res, out, errOut := runExampleErr(t)
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	return res, out
}

// runExampleErr is runExample with its stderr (the warnings) returned.
func runExampleErr(t *testing.T) (*result, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := run(ctx, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if res.status != [2]int{200, 200} {
		t.Fatalf("statuses %v, want both 200\n%s", res.status, out.String())
	}
	return res, out.String(), errOut.String()
}

// checkContendedPair: two requests in two traces; the waiter's lock.acquire
// links to the holder's request (its lock.acquire's parent); lock.hold and the handler's span sit
// where they should.
func checkContendedPair(t *testing.T, spans []trace.ReadOnlySpan) {
	t.Helper()
	var acquires, holds, servers, charges []trace.ReadOnlySpan
	byID := map[string]trace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
		switch s.Name() {
		case otellock.SpanAcquire:
			acquires = append(acquires, s)
		case otellock.SpanHold:
			holds = append(holds, s)
		case "POST " + payRoute:
			servers = append(servers, s)
		case "charge card":
			charges = append(charges, s)
		}
	}
	if len(acquires) != 2 || len(holds) != 2 || len(servers) != 2 || len(charges) != 2 {
		t.Fatalf("spans: %d acquire, %d hold, %d server, %d charge; want 2 each", len(acquires), len(holds), len(servers), len(charges))
	}
	if servers[0].SpanContext().TraceID() == servers[1].SpanContext().TraceID() {
		t.Fatal("both requests in one trace")
	}
	var holder, waiter trace.ReadOnlySpan
	for _, a := range acquires {
		if len(a.Links()) > 0 {
			waiter = a
		} else {
			holder = a
		}
	}
	if holder == nil || waiter == nil || len(waiter.Links()) != 1 {
		t.Fatalf("want one lock.acquire with one link and one without")
	}
	l := waiter.Links()[0].SpanContext
	if l.TraceID() != holder.SpanContext().TraceID() || l.SpanID() != holder.Parent().SpanID() {
		t.Fatalf("link %v/%v, want the holder's request %v/%v", l.TraceID(), l.SpanID(), holder.SpanContext().TraceID(), holder.Parent().SpanID())
	}
	for _, s := range append(acquires, holds...) {
		if p := byID[s.Parent().SpanID().String()]; p == nil || p.Name() != "POST "+payRoute {
			t.Fatalf("%s's parent is not the server span", s.Name())
		}
	}
	for _, c := range charges {
		if p := byID[c.Parent().SpanID().String()]; p == nil || p.Name() != otellock.SpanHold {
			t.Fatalf("charge card's parent is not lock.hold")
		}
	}
}

// Default: embedded miniredis, spans and metrics to stdout, then the tree.
func TestExampleStdout(t *testing.T) {
	noOTLP(t)
	res, out := runExample(t)
	checkContendedPair(t, res.spans)
	for _, want := range []string{
		`{"Name":"lock.acquire"`, // stdouttrace's JSON
		"embedded miniredis",
		"link → trace 1, span POST " + payRoute,
		"lockkit.lock.acquisitions{",
		otellock.MetricContentions,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// REDIS_URL points the example at a real redis-server.
func TestExampleRedisURL(t *testing.T) {
	noOTLP(t)
	srv := redistest.Start(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr()+"/0")
	res, out := runExample(t)
	checkContendedPair(t, res.spans)
	if !strings.Contains(out, "locks on redis at "+srv.Addr()) {
		t.Fatalf("output does not name the Redis of REDIS_URL:\n%s", out)
	}
}

// collector counts what an OTLP receiver got: spans by name, links on
// lock.acquire, metric names.
type collector struct {
	mu      sync.Mutex
	spans   map[string]int
	links   int
	metrics map[string]bool
}

func newCollector() *collector {
	return &collector{spans: map[string]int{}, metrics: map[string]bool{}}
}

func (c *collector) traces(req *colltrace.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans[s.GetName()]++
				if s.GetName() == otellock.SpanAcquire {
					c.links += len(s.GetLinks())
				}
			}
		}
	}
}

func (c *collector) metricsReq(req *collmetric.ExportMetricsServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				c.metrics[m.GetName()] = true
			}
		}
	}
}

func (c *collector) check(t *testing.T, out string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spans[otellock.SpanAcquire] != 2 || c.spans[otellock.SpanHold] != 2 || c.links != 1 {
		t.Fatalf("collector got spans %v with %d links on lock.acquire; want 2 acquire, 2 hold, 1 link", c.spans, c.links)
	}
	for _, m := range []string{otellock.MetricAcquisitions, otellock.MetricAcquireDuration, otellock.MetricContentions} {
		if !c.metrics[m] {
			t.Errorf("collector lacks metric %s (got %v)", m, c.metrics)
		}
	}
	if strings.Contains(out, `{"Name":`) {
		t.Error("spans also went to stdout")
	}
}

// startOTLPHTTP is an OTLP/HTTP receiver for col; with metrics false it
// has no /v1/metrics (a traces-only backend answers 404).
func startOTLPHTTP(t *testing.T, col *collector, metrics bool) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req colltrace.ExportTraceServiceRequest
		if b, err := io.ReadAll(r.Body); err != nil || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		col.traces(&req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	if metrics {
		mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
			var req collmetric.ExportMetricsServiceRequest
			if b, err := io.ReadAll(r.Body); err != nil || proto.Unmarshal(b, &req) != nil {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			col.metricsReq(&req)
			w.Header().Set("Content-Type", "application/x-protobuf")
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

func TestExampleOTLPHTTP(t *testing.T) {
	noOTLP(t)
	col := newCollector()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", startOTLPHTTP(t, col, true))
	_, out := runExample(t)
	if !strings.Contains(out, "OTLP/HTTP") {
		t.Fatalf("output: %s", out)
	}
	col.check(t, out)
}

// A traces-only backend (Jaeger has no metrics endpoint): the spans arrive,
// the metrics export to a port that refuses is a warning, and the example
// succeeds (exit status 0) with its summary printed.
func TestExampleTracesOnlyBackend(t *testing.T) {
	noOTLP(t)
	col := newCollector()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", startOTLPHTTP(t, col, false)+"/v1/traces")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://"+refused+"/v1/metrics")
	res, out, errOut := runExampleErr(t)
	checkContendedPair(t, res.spans)
	if n := strings.Count(errOut, "warning: "); n == 0 || n > 6 || !strings.Contains(errOut, "metrics") {
		t.Errorf("want a few warnings about the metrics export, stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "# span tree") || !strings.Contains(out, otellock.MetricContentions) {
		t.Errorf("no summary:\n%s", out)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.spans[otellock.SpanAcquire] != 2 || col.spans[otellock.SpanHold] != 2 {
		t.Errorf("receiver got spans %v", col.spans)
	}
}

// OTEL_METRICS_EXPORTER=none: one endpoint for both signals, spans only.
func TestExampleMetricsNone(t *testing.T) {
	noOTLP(t)
	col := newCollector()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", startOTLPHTTP(t, col, true))
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	_, out := runExample(t)
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.spans[otellock.SpanAcquire] != 2 || len(col.metrics) != 0 || strings.Contains(out, `"Resource"`) {
		t.Errorf("receiver got spans %v, metrics %v; output:\n%s", col.spans, col.metrics, out)
	}
}

type grpcTraces struct {
	colltrace.UnimplementedTraceServiceServer
	c *collector
}

func (g grpcTraces) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	g.c.traces(req)
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	collmetric.UnimplementedMetricsServiceServer
	c *collector
}

func (g grpcMetrics) Export(_ context.Context, req *collmetric.ExportMetricsServiceRequest) (*collmetric.ExportMetricsServiceResponse, error) {
	g.c.metricsReq(req)
	return &collmetric.ExportMetricsServiceResponse{}, nil
}

func TestExampleOTLPGRPC(t *testing.T) {
	noOTLP(t)
	col := newCollector()
	gs := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(gs, grpcTraces{c: col})
	collmetric.RegisterMetricsServiceServer(gs, grpcMetrics{c: col})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, out := runExample(t)
	if !strings.Contains(out, "OTLP/gRPC") {
		t.Fatalf("output: %s", out)
	}
	col.check(t, out)
}

// A REDIS_URL that does not parse is refused without its password in the
// error.
func TestExampleBadRedisURL(t *testing.T) {
	noOTLP(t)
	t.Setenv("REDIS_URL", "redis://alice:hunterA@127.0.0.1:port/0")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	_, err := run(ctx, &out, &out)
	if err == nil {
		t.Fatal("run succeeded")
	}
	if s := err.Error() + out.String(); strings.Contains(s, "hunter") || strings.Contains(s, "alice") {
		t.Errorf("the userinfo is shown: %v\n%s", err, out.String())
	}
}
