package otelsetup

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// signal is "TRACES" or "METRICS", as in the variables' names.
type signal string

const (
	sigTraces  signal = "TRACES"
	sigMetrics signal = "METRICS"
)

// anySet reports whether any variable that chooses an exporter or an
// endpoint is set: when none is, an example exports nothing (or to its
// Fallback) instead of autoexport's OTLP to localhost.
func anySet() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || signalSet(sigTraces) || signalSet(sigMetrics)
}

// signalSet: OTEL_<SIGNAL>_EXPORTER or OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT.
func signalSet(s signal) bool {
	return os.Getenv("OTEL_"+string(s)+"_EXPORTER") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+string(s)+"_ENDPOINT") != ""
}

// exported reports whether autoexport should build signal s's exporter: its
// exporter is named, or an OTLP endpoint for it (its own or the common one)
// is set.
func exported(s signal) bool {
	return signalSet(s) || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// spanExporter is autoexport's span exporter when the environment asks for
// one, the Fallback's otherwise; nil when spans go nowhere.
func spanExporter(ctx context.Context, cfg config, useFallback bool) (sdktrace.SpanExporter, string, error) {
	switch {
	case exported(sigTraces):
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, "", err
		}
		if autoexport.IsNoneSpanExporter(exp) {
			return nil, "none", nil
		}
		return exp, describe(sigTraces), nil
	case useFallback && cfg.fallback != nil:
		exp, err := stdouttrace.New(stdouttrace.WithWriter(cfg.fallback))
		return exp, "stdout", err
	}
	return nil, "none", nil
}

// metricReader is autoexport's reader when the environment asks for one,
// the Fallback's otherwise; nil when metrics go nowhere.
func metricReader(ctx context.Context, cfg config, useFallback bool) (sdkmetric.Reader, string, error) {
	switch {
	case exported(sigMetrics):
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, "", err
		}
		if autoexport.IsNoneMetricReader(r) {
			return nil, "none", nil
		}
		return r, describe(sigMetrics), nil
	case useFallback && cfg.fallback != nil:
		r, err := stdoutMetrics(cfg.fallback, cfg.interval)
		return r, "stdout", err
	}
	return nil, "none", nil
}

// describe says where autoexport sends signal s, from the same variables
// it read.
func describe(s signal) string {
	exp := os.Getenv("OTEL_" + string(s) + "_EXPORTER")
	switch exp {
	case "", "otlp":
	case "console":
		return "stdout"
	case "prometheus":
		return "Prometheus at " + PrometheusURL()
	default:
		return exp
	}
	proto := firstEnv("OTEL_EXPORTER_OTLP_"+string(s)+"_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if ep := os.Getenv("OTEL_EXPORTER_OTLP_" + string(s) + "_ENDPOINT"); ep != "" {
		return otlpName(proto) + " " + ep
	}
	ep := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if ep == "" {
		ep = "http://localhost:4318"
		if proto == "grpc" {
			ep = "http://localhost:4317"
		}
	}
	if proto != "grpc" {
		ep = strings.TrimSuffix(ep, "/") + "/v1/" + strings.ToLower(string(s))
	}
	return otlpName(proto) + " " + ep
}

func otlpName(proto string) string {
	if proto == "grpc" {
		return "OTLP/gRPC"
	}
	return "OTLP/HTTP"
}

// PrometheusURL is where OTEL_METRICS_EXPORTER=prometheus serves the
// metrics: OTEL_EXPORTER_PROMETHEUS_HOST and _PORT, or autoexport's
// defaults, localhost:9464.
func PrometheusURL() string {
	host := firstEnv("OTEL_EXPORTER_PROMETHEUS_HOST")
	if host == "" {
		host = "localhost"
	}
	port := firstEnv("OTEL_EXPORTER_PROMETHEUS_PORT")
	if port == "" {
		port = "9464"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + port + "/metrics"
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
