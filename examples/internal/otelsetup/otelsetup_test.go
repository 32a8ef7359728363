package otelsetup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

var vars = []string{
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT",
}

func clearEnv(t *testing.T) {
	for _, v := range vars {
		t.Setenv(v, "")
	}
}

func value(r *resource.Resource, k attribute.Key) string {
	v, _ := r.Set().Value(k)
	return v.AsString()
}

func setup(t *testing.T, opts ...Option) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing the tests record needs to reach a backend (which is not
	// there): a short deadline, not DefaultShutdownTimeout.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		tel.Shutdown(ctx)
	})
	return tel
}

// The resource: the example's service.name unless the environment names
// one; service.instance.id from the environment, else InstanceID, else
// random (two processes differ).
func TestResource(t *testing.T) {
	clearEnv(t)
	a, b := setup(t, ServiceName("ex")), setup(t, ServiceName("ex"))
	if value(a.Resource(), semconv.ServiceNameKey) != "ex" || a.InstanceID() == "" || a.InstanceID() == b.InstanceID() {
		t.Errorf("defaults: %v / %v", a.Resource(), b.Resource())
	}
	if c := setup(t, ServiceName("ex"), InstanceID("owner-1")); c.InstanceID() != "owner-1" || value(c.Resource(), semconv.ServiceInstanceIDKey) != "owner-1" {
		t.Errorf("InstanceID: %v", c.Resource())
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=fromattrs,service.instance.id=pod-7,deployment.environment.name=test")
	if c := setup(t, ServiceName("ex"), InstanceID("owner-1")); value(c.Resource(), semconv.ServiceNameKey) != "fromattrs" || c.InstanceID() != "pod-7" {
		t.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", c.Resource())
	}
	t.Setenv("OTEL_SERVICE_NAME", "fromenv")
	if c := setup(t, ServiceName("ex")); value(c.Resource(), semconv.ServiceNameKey) != "fromenv" {
		t.Errorf("OTEL_SERVICE_NAME: %v", c.Resource())
	}
}

// What is exported, by the variables set.
func TestSelection(t *testing.T) {
	for _, tc := range []struct {
		env             map[string]string
		fallback        bool
		traces, metrics string
	}{
		{nil, false, "none", "none"},
		{nil, true, "stdout", "stdout"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, "OTLP/HTTP http://c:4318/v1/traces", "OTLP/HTTP http://c:4318/v1/metrics"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTLP/gRPC http://c:4317", "OTLP/gRPC http://c:4317"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://j:4318/v1/traces"}, true, "OTLP/HTTP http://j:4318/v1/traces", "none"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_METRICS_EXPORTER": "none"}, false, "OTLP/HTTP http://c:4318/v1/traces", "none"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false, "OTLP/HTTP http://localhost:4318/v1/traces", "none"},
		{map[string]string{"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1", "OTEL_EXPORTER_PROMETHEUS_PORT": "0"}, true, "none", "Prometheus at http://127.0.0.1:0/metrics"},
	} {
		t.Run("", func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var opts []Option
			if tc.fallback {
				opts = append(opts, Fallback(&bytes.Buffer{}))
			}
			tel := setup(t, opts...)
			if tel.Traces != tc.traces || tel.Metrics != tc.metrics {
				t.Errorf("%v: traces to %q, metrics to %q; want %q, %q", tc.env, tel.Traces, tel.Metrics, tc.traces, tc.metrics)
			}
			if on := tc.traces != "none" || tc.metrics != "none"; tel.Enabled() != on || (tel.Banner() != "") != on {
				t.Errorf("Enabled %v, banner %q", tel.Enabled(), tel.Banner())
			}
		})
	}
}

// A bad value is an error, not a silent default.
func TestBadExporter(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin-v0")
	if _, err := Setup(context.Background()); err == nil || !strings.Contains(err.Error(), "traces exporter") {
		t.Fatalf("Setup: %v", err)
	}
}

// Export errors are a bounded number of warnings, each shown once, none
// after Shutdown, which says how many were left out.
func TestWarnings(t *testing.T) {
	clearEnv(t)
	var w bytes.Buffer
	tel, err := Setup(context.Background(), Warnings(&w))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		otel.Handle(errors.New("export failed:\n  connection refused"))
	}
	for i := range 10 {
		otel.Handle(fmt.Errorf("export %d failed", i))
	}
	tel.Shutdown(context.Background())
	otel.Handle(errors.New("late"))
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != maxWarnings+1 || lines[0] != "warning: telemetry: export failed: connection refused" || lines[1] != "warning: telemetry: export 0 failed" ||
		!strings.Contains(lines[maxWarnings], "25 more export errors") || strings.Contains(w.String(), "late") || tel.Warnings() != 30 {
		t.Errorf("%d warnings:\n%s", tel.Warnings(), w.String())
	}
}

// A flush the deadline ended says so in one warning, with what else
// failed after it.
func TestShutdownCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nothing else failed", nil, `^warning: telemetry: flushing telemetry: cut at the shutdown deadline after \S+, some spans or metrics not sent$`},
		{"a processor failed", errors.New("processor stuck"), `^warning: telemetry: flushing telemetry: cut at the shutdown deadline after \S+, some spans or metrics not sent: processor stuck$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			var w bytes.Buffer
			tel, err := Setup(context.Background(), Warnings(&w), SpanProcessor(failingProcessor{tc.err}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // already past
			defer cancel()
			if !tel.Shutdown(ctx) {
				t.Error("Shutdown past its deadline: not cut")
			}
			if out := strings.TrimSpace(w.String()); !regexp.MustCompile(tc.want).MatchString(out) {
				t.Errorf("warnings %q, want %s", out, tc.want)
			}
		})
	}
}

// failingProcessor is a span processor whose Shutdown returns err.
type failingProcessor struct{ err error }

func (failingProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (failingProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (failingProcessor) ForceFlush(context.Context) error                { return nil }
func (p failingProcessor) Shutdown(context.Context) error                { return p.err }

func TestJoinDistinct(t *testing.T) {
	dl := context.DeadlineExceeded
	errs := []error{nil, dl, dl, errors.New("x"), dl, nil, fmt.Errorf("wrapped: %w", dl)}
	if err := joinDistinct(errs, false); err == nil || err.Error() != "context deadline exceeded\nx\nwrapped: context deadline exceeded" || !errors.Is(err, dl) {
		t.Errorf("joinDistinct = %q", err)
	}
	// Cut at the deadline (which the caller says): the bare deadline
	// errors go, the ones that say more stay.
	if err := joinDistinct(errs, true); err == nil || err.Error() != "x\nwrapped: context deadline exceeded" {
		t.Errorf("joinDistinct, cut = %q", err)
	}
	if joinDistinct([]error{nil, nil}, false) != nil {
		t.Error("joinDistinct of nils is not nil")
	}
}
