package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/promtest"
)

// The dashboard over the demo: a real Prometheus scrapes the demo's OTel
// Prometheus exporter (autoexport, configured by the standard environment
// variables) through a contended run with hot orders, and every query of
// the dashboard, evaluated at a time inside the run, answers with series
// of the lock names and the labels it groups by.
func TestPrometheusDashboardDemo(t *testing.T) {
	d := loadDashboard(t)
	port, err := promtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.Start(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	// autoexport reads the process's environment.
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", strconv.Itoa(port))
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_LOGS_EXPORTER", "none")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	var out, errOut bytes.Buffer
	code, done := -1, make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, []string{"-duration", "6s"}, os.Getenv, &out, &errOut)
	}()
	// A failed wait still ends the demo before Prometheus is killed.
	t.Cleanup(func() { cancel(); <-done })
	at := prom.WaitScrapes(t, scrapes, 30*time.Second, done)
	<-done
	if code != exitOK {
		t.Fatalf("demo exit status %d\n%s\n%s", code, out.String(), errOut.String())
	}
	checkDashboard(t, prom, at, d)
}
