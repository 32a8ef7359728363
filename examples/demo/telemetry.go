package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/otellock"
)

// EnvOTLP is the standard OpenTelemetry variable -otlp defaults to.
const EnvOTLP = "OTEL_EXPORTER_OTLP_ENDPOINT"

// observers returns the Observers every replica's lock Client gets besides
// its report observer (lockStats), and shutdown, which flushes them. With
// an OTLP endpoint (HTTP/protobuf, or gRPC when OTEL_EXPORTER_OTLP_PROTOCOL
// is "grpc") the lock's spans — lock.acquire, with a link from a waiter to
// its holder's trace, and lock.hold — and its metrics go there through
// otellock, on providers of the demo's own (no globals are set).
func observers(ctx context.Context, otlpEndpoint string, out io.Writer) (extra []core.Observer, shutdown func(context.Context) error, err error) {
	shutdown = func(context.Context) error { return nil }
	if otlpEndpoint == "" {
		return nil, shutdown, nil
	}
	var (
		spanExp   sdktrace.SpanExporter
		metricExp sdkmetric.Exporter
	)
	// The endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: the
	// signal paths (/v1/traces, /v1/metrics) are appended to it.
	u, err := url.Parse(otlpEndpoint)
	if err != nil || u.Host == "" {
		return nil, shutdown, fmt.Errorf("OTLP endpoint %q: want a URL such as http://localhost:4318", otlpEndpoint)
	}
	insecure := u.Scheme == "http"
	base := strings.TrimSuffix(u.Path, "/")
	const timeout = 5 * time.Second
	if strings.EqualFold(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "grpc") {
		topts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host), otlptracegrpc.WithTimeout(timeout)}
		mopts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(u.Host), otlpmetricgrpc.WithTimeout(timeout)}
		if insecure {
			topts = append(topts, otlptracegrpc.WithInsecure())
			mopts = append(mopts, otlpmetricgrpc.WithInsecure())
		}
		if spanExp, err = otlptracegrpc.New(ctx, topts...); err == nil {
			metricExp, err = otlpmetricgrpc.New(ctx, mopts...)
		}
	} else {
		topts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(base + "/v1/traces"), otlptracehttp.WithTimeout(timeout)}
		mopts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(u.Host), otlpmetrichttp.WithURLPath(base + "/v1/metrics"), otlpmetrichttp.WithTimeout(timeout)}
		if insecure {
			topts = append(topts, otlptracehttp.WithInsecure())
			mopts = append(mopts, otlpmetrichttp.WithInsecure())
		}
		if spanExp, err = otlptracehttp.New(ctx, topts...); err == nil {
			metricExp, err = otlpmetrichttp.New(ctx, mopts...)
		}
	}
	if err != nil {
		return nil, shutdown, fmt.Errorf("OTLP exporter for %s: %w", otlpEndpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", "lockkit-demo")))
	if err != nil {
		return nil, shutdown, err
	}
	// Batching: exporting never runs inside the lock engine's calls.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spanExp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(5*time.Second))))
	obs := otellock.New(otellock.WithTracerProvider(tp), otellock.WithMeterProvider(mp),
		otellock.WithPropagators(propagation.TraceContext{}), otellock.WithKeyAttribute(otellock.KeyRaw))
	fmt.Fprintf(out, "exporting lock spans and metrics over OTLP to %s\n", otlpEndpoint)
	shutdown = func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}
	return []core.Observer{obs}, shutdown, nil
}
