package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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
// from all three replicas' lock Clients on one endpoint, while it runs, and
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
