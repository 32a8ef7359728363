package otelsetup

import (
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Instruments is what a server instruments itself with: the front ends of
// the orders service (ordersgin, ordersecho, ordersfiber, ordersgrpc) make
// every request a server span on TracerProvider, under which the lock
// adapters start the lock's spans. The zero value instruments nothing.
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

// LockObserver is otellock on i's providers: lock.acquire and lock.hold
// under the request's span, a link from a waiter to its holder's trace
// (W3C Trace Context in the holder metadata), the lock's metrics. Keys are
// recorded as they are (the examples' keys are order ids, not secrets).
// It is nil when i is off: the lock Client then has no Observer to feed.
func LockObserver(i Instruments) core.Observer {
	if !i.On() {
		return nil
	}
	return otellock.New(otellock.WithTracerProvider(i.TracerProvider), otellock.WithMeterProvider(i.MeterProvider),
		otellock.WithPropagators(propagation.TraceContext{}), otellock.WithKeyAttribute(otellock.KeyRaw))
}

// Banner is one line saying where telemetry goes, or "" when nowhere.
func (t *Telemetry) Banner() string {
	if t.Traces == "none" && t.Metrics == "none" {
		return ""
	}
	return "telemetry: traces to " + t.Traces + ", metrics to " + t.Metrics + " (service.instance.id " + t.instance + ")"
}
