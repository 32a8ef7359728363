package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const serviceName = "lockkit-otel-example"

// telemetry is the process's OpenTelemetry pipeline, installed as the
// globals (which otelgin and otellock.New() pick up), plus in-memory copies
// the demo prints as a summary at the end.
type telemetry struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	spans   *tracetest.SpanRecorder // every ended span, for the tree summary
	metrics *sdkmetric.ManualReader // for the metric summary
	target  string                  // where spans and metrics go
}

// setupTelemetry exports over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or the
// traces-specific variable) is set, over gRPC when OTEL_EXPORTER_OTLP_PROTOCOL
// is "grpc" and over HTTP/protobuf otherwise (the specification's default);
// without an endpoint it writes spans and metrics to out as JSON lines. The
// exporters read the other OTEL_EXPORTER_OTLP_* variables (headers, TLS,
// timeouts) themselves.
func setupTelemetry(ctx context.Context, out io.Writer) (*telemetry, error) {
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(attribute.String("service.name", serviceName)))
	if err != nil {
		return nil, err
	}
	var (
		spanExp   sdktrace.SpanExporter
		metricExp sdkmetric.Exporter
		target    string
	)
	if endpoint := firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint != "" {
		proto := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
		if strings.EqualFold(proto, "grpc") {
			target = "OTLP/gRPC " + endpoint
			if spanExp, err = otlptracegrpc.New(ctx); err == nil {
				metricExp, err = otlpmetricgrpc.New(ctx)
			}
		} else {
			target = "OTLP/HTTP " + endpoint
			if spanExp, err = otlptracehttp.New(ctx); err == nil {
				metricExp, err = otlpmetrichttp.New(ctx)
			}
		}
	} else {
		target = "stdout"
		if spanExp, err = stdouttrace.New(stdouttrace.WithWriter(out)); err == nil {
			metricExp, err = stdoutmetric.New(stdoutmetric.WithWriter(out))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("exporter for %s: %w", target, err)
	}

	t := &telemetry{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader(), target: target}
	// A batching processor: exporting never runs inside the lock engine's
	// calls (see the otellock package doc).
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(spanExp), sdktrace.WithSpanProcessor(t.spans))
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(10*time.Second))),
		sdkmetric.WithReader(t.metrics))
	otel.SetTracerProvider(t.tp)
	otel.SetMeterProvider(t.mp)
	// W3C Trace Context is also what otellock writes into the lock's holder
	// metadata, so a waiter can link to the holder's trace.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return t, nil
}

// shutdown flushes both pipelines (the last spans and metrics are exported
// here).
func (t *telemetry) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
