package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otelVars are the variables the demo's telemetry reads; noOTel clears
// them so a test sees only what it sets.
var otelVars = []string{
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT",
}

func noOTel(t *testing.T) {
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
}

// freePort is a loopback port nothing listens on (a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// With OTEL_METRICS_EXPORTER=prometheus the demo serves lockkit's metrics,
// from every replica's lock Client on one endpoint, while it runs, and
// says where.
func TestMetricsEndpoint(t *testing.T) {
	noOTel(t)
	port := strconv.Itoa(freePort(t))
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", port)
	url := "http://127.0.0.1:" + port + "/metrics"
	var scraped string
	var scrapeErr error
	cfg := testConfig("")
	cfg.hooks.loaded = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			scrapeErr = err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			scrapeErr = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		scraped, scrapeErr = string(b), err
	}
	res, out := runScenario(t, cfg)
	checkHolds(t, res, out)
	if scrapeErr != nil {
		t.Fatalf("scraping %s: %v", url, scrapeErr)
	}
	if !strings.Contains(out, "metrics to Prometheus at "+url) {
		t.Errorf("the demo does not say where metrics are served:\n%s", out)
	}
	for _, want := range []string{
		"lockkit_lock_acquire_duration_seconds_bucket{",
		"lockkit_lock_acquisitions_total{",
		`service_name="lockkit-demo"`,
	} {
		if !strings.Contains(scraped, want) {
			t.Errorf("%s lacks %q:\n%s", url, want, scraped)
		}
	}
	// After the run the endpoint is gone (the port is free again).
	if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err != nil {
		t.Errorf("the metrics endpoint outlived the run: %v", err)
	} else {
		ln.Close()
	}
}

// receiver is a tiny OTLP/HTTP receiver: it accepts /v1/traces (and, when
// metrics is set, /v1/metrics) and counts the requests and the spans.
type receiver struct {
	url                  string
	mu                   sync.Mutex
	traceReqs, spans     int
	metricReqs, unknowns int
}

func startReceiver(t *testing.T, metrics bool) *receiver {
	t.Helper()
	rc := &receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req colltrace.ExportTraceServiceRequest
		if b, err := io.ReadAll(r.Body); err != nil || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.traceReqs++
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				rc.spans += len(ss.GetSpans())
			}
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		if metrics && r.URL.Path == "/v1/metrics" {
			rc.metricReqs++
		} else {
			rc.unknowns++
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	rc.url = "http://" + ln.Addr().String()
	return rc
}

func (rc *receiver) counts() (traceReqs, spans, metricReqs, unknowns int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.traceReqs, rc.spans, rc.metricReqs, rc.unknowns
}

// runDemo runs the demo as main does, in-process, until every replica has
// answered every kind of request once.
func runDemo(t *testing.T) (code int, out, errOut string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	code = run(ctx, []string{"-duration", "200ms", "-each", "1", "-concurrency", "8", "-orders", "20", "-hot", "1"}, func(string) string { return "" }, &o, &e)
	return code, o.String(), e.String()
}

// A traces-only backend (Jaeger has no metrics endpoint): the spans arrive,
// the metrics export fails, and that is a warning, not the run's result —
// the report is printed and the exit status is the witness's.
func TestTracesOnlyBackend(t *testing.T) {
	noOTel(t)
	rc := startReceiver(t, false)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rc.url+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:"+strconv.Itoa(freePort(t))+"/v1/metrics") // refuses
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
	start := time.Now()
	code, out, errOut := runDemo(t)
	if code != exitOK || !strings.Contains(out, "the witness holds") || !strings.Contains(out, titleLocks) {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	warnings := strings.Count(errOut, "warning: ")
	if warnings == 0 || warnings > 6 || !strings.Contains(errOut, "metrics") {
		t.Errorf("want a few warnings about the metrics export, got:\n%s", errOut)
	}
	if !strings.Contains(out, "traces to OTLP/HTTP "+rc.url+"/v1/traces") {
		t.Errorf("the demo does not say where spans go:\n%s", out)
	}
	traceReqs, spans, _, unknowns := rc.counts()
	if traceReqs == 0 || spans == 0 || unknowns != 0 {
		t.Errorf("receiver: %d trace requests, %d spans, %d other requests", traceReqs, spans, unknowns)
	}
	t.Logf("took %v, %d spans arrived; stderr:\n%s", time.Since(start), spans, errOut)
}

// OTEL_METRICS_EXPORTER=none is honoured: with one endpoint for both
// signals, spans go there and no metrics export is attempted.
func TestMetricsExporterNone(t *testing.T) {
	noOTel(t)
	rc := startReceiver(t, true)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	code, out, errOut := runDemo(t)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	traceReqs, spans, metricReqs, unknowns := rc.counts()
	if traceReqs == 0 || spans == 0 || metricReqs != 0 || unknowns != 0 {
		t.Errorf("receiver: %d trace requests, %d spans, %d metrics requests, %d other", traceReqs, spans, metricReqs, unknowns)
	}
	if !strings.Contains(out, "metrics to none") {
		t.Errorf("banner:\n%s", out)
	}
}

// Nothing set: nothing is exported and nothing is said about it.
func TestNoTelemetryByDefault(t *testing.T) {
	noOTel(t)
	code, out, errOut := runDemo(t)
	if code != exitOK || errOut != "" || strings.Contains(out, "telemetry:") {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// An OTLP/gRPC backend that is down (nothing listens on its port): the
// spans and metrics cannot be sent, and the flush at the end is cut
// shutdownGrace after the load, so the run ends within 3 s of its load
// with exit status 0, and the warnings say what failed, each once.
func TestUnreachableGRPCBackend(t *testing.T) {
	noOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:"+strconv.Itoa(freePort(t)))
	cfg := testConfig("")
	var loaded, flushedAt time.Time
	cut, flushed := false, false
	cfg.hooks.loaded = func() { loaded = time.Now() }
	cfg.hooks.flushed = func(c bool) { cut, flushed, flushedAt = c, true, time.Now() }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := scenario(ctx, cfg, &out, &errOut)
	ended := time.Now()
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	report(&out, res)
	if code := exitCode(res); code != exitOK || !strings.Contains(out.String(), "telemetry: traces to OTLP/gRPC") {
		t.Fatalf("exit status %d\n%s\n%s", code, out.String(), errOut.String())
	}
	// The flush was cut at its deadline: the deadline is what bounds the
	// run's end, not a backend that answered in time.
	if !flushed || !cut {
		t.Errorf("telemetry flushed %v, cut at its deadline %v: want it cut", flushed, cut)
	}
	after := ended.Sub(loaded)
	t.Logf("load ended %v before the scenario returned; the flush ended %v after the load (deadline %v)",
		after.Round(time.Millisecond), flushedAt.Sub(loaded).Round(time.Millisecond), shutdownGrace)
	if after > 3*time.Second {
		t.Errorf("the run ended %v after its load, more than 3s (the flush may take %v)", after, shutdownGrace)
	}
	warnings := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	seen := map[string]bool{}
	for _, w := range warnings {
		if !strings.HasPrefix(w, "warning: telemetry: ") || seen[w] || strings.Count(w, "context deadline exceeded") > 1 {
			t.Errorf("warning %q: not a telemetry warning, or said twice", w)
		}
		seen[w] = true
	}
	if !strings.Contains(errOut.String(), "cut at the shutdown deadline") {
		t.Errorf("no warning says the flush was cut:\n%s", errOut.String())
	}
	t.Logf("stderr:\n%s", errOut.String())
}
