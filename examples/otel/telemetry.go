package main

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockkit/lockkit/examples/internal/otelsetup"
)

// serviceName is the example's service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) names another.
const serviceName = "lockkit-otel-example"

// telemetry is the process's OpenTelemetry pipeline (otelsetup, from the
// standard variables), installed as the globals (which otelgin and
// otellock.New() pick up), plus in-memory copies the example prints as a
// summary at the end.
type telemetry struct {
	tel     *otelsetup.Telemetry
	spans   *tracetest.SpanRecorder // every ended span, for the tree summary
	metrics *sdkmetric.ManualReader // for the metric summary
	target  string                  // where spans and metrics go
}

// setupTelemetry exports what the OTEL_* variables say (see otelsetup);
// with none of them set it writes spans and metrics to out as JSON lines.
// Export errors are warnings on errOut.
func setupTelemetry(ctx context.Context, out, errOut io.Writer) (*telemetry, error) {
	t := &telemetry{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader()}
	tel, err := otelsetup.Setup(ctx, otelsetup.ServiceName(serviceName), otelsetup.Fallback(out), otelsetup.Warnings(errOut),
		otelsetup.MetricInterval(10*time.Second), otelsetup.SpanProcessor(t.spans), otelsetup.MetricReader(t.metrics))
	if err != nil {
		return nil, err
	}
	t.tel = tel
	t.target = "traces to " + tel.Traces + ", metrics to " + tel.Metrics
	otel.SetTracerProvider(tel.TracerProvider(""))
	otel.SetMeterProvider(tel.MeterProvider())
	// W3C Trace Context is also what otellock writes into the lock's holder
	// metadata, so a waiter can link to the holder's trace.
	otel.SetTextMapPropagator(tel.Propagator())
	return t, nil
}

// shutdown flushes both pipelines (the last spans and metrics are exported
// here); what fails is a warning.
func (t *telemetry) shutdown(ctx context.Context) { t.tel.Shutdown(ctx) }
