package otellock

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// config is resolved once, in New: later changes to the global providers
// reach the observer only through the globals' own delegation.
type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagators    propagation.TextMapPropagator
	keyMode        KeyMode
	holdSpan       bool
}

func newConfig(opts []Option) config {
	c := config{keyMode: KeyHashed, holdSpan: true}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.propagators == nil {
		c.propagators = otel.GetTextMapPropagator()
	}
	return c
}

// Option configures the observer returned by New.
type Option func(*config)

// WithTracerProvider sets the TracerProvider the spans come from (default:
// the global one, otel.GetTracerProvider(), taken when New runs).
//
// Export through a batching span processor (sdktrace.WithBatcher): a
// SimpleSpanProcessor exports inside span.End, that is inside the lock
// engine's calls, and a slow exporter would then slow acquire and renewal.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider sets the MeterProvider the instruments come from
// (default: the global one, otel.GetMeterProvider(), taken when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithPropagators sets the propagator that writes the holder's span context
// into the lock's holder metadata and reads it back on the waiter's side
// (default: the global one, otel.GetTextMapPropagator(), taken when New
// runs). When it writes nothing — the global default is a no-op until a
// service sets one — the span context is written as W3C Trace Context
// anyway, so holder links need no propagator to be configured.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagators = p }
}

// KeyMode says how the concrete lock key appears on spans, as attribute
// lockkit.lock.key. Metrics never carry the key (its cardinality is the
// number of orders, accounts, tenants...).
type KeyMode uint8

const (
	// KeyHashed (default) records a short hash of the key (HashKey): the
	// spans of one key can be found together, the key itself is not shown.
	// It hides the key from a glance, not from someone who can guess it.
	KeyHashed KeyMode = iota
	// KeyOmit records no key attribute.
	KeyOmit
	// KeyRaw records the key as given to Acquire. Use it when keys carry no
	// personal or secret data.
	KeyRaw
)

func (m KeyMode) String() string {
	switch m {
	case KeyHashed:
		return "hashed"
	case KeyOmit:
		return "omit"
	case KeyRaw:
		return "raw"
	}
	return "unknown"
}

// WithKeyAttribute sets how the lock key is recorded on spans (default
// KeyHashed). An unknown mode records no key.
func WithKeyAttribute(mode KeyMode) Option {
	return func(c *config) { c.keyMode = mode }
}

// WithHoldSpan turns the lock.hold span on or off (default on). Off, the
// lease's context carries the span of the acquire context (the request's),
// and hold metrics are still recorded.
func WithHoldSpan(on bool) Option {
	return func(c *config) { c.holdSpan = on }
}
