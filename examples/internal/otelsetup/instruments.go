package otelsetup

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Instruments is what a server instruments itself with: the front ends of
// the orders service (ordersgin, ordersecho, ordersgrpc) make every request
// a server span on TracerProvider, under which the lock adapters start the
// lock's spans. The zero value instruments nothing.
type Instruments struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
}

// On reports whether there is anything to record to.
func (i Instruments) On() bool { return i.TracerProvider != nil }

// Instruments returns the instruments of one server of the process:
// TracerProvider(instanceID), the MeterProvider, the Propagator. When
// nothing records telemetry it is the zero value.
func (t *Telemetry) Instruments(instanceID string) Instruments {
	if !t.Enabled() {
		return Instruments{}
	}
	return Instruments{TracerProvider: t.TracerProvider(instanceID), MeterProvider: t.MeterProvider(), Propagator: t.Propagator()}
}
