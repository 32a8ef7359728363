// Package otellock reports lockkit's lock waits and holds to OpenTelemetry:
// spans that show how long a request waited for a lock and whose request
// held it, and metrics that show which locks are hot. Install it on a
// Client with core.WithObserver(otellock.New()).
//
// New takes the global TracerProvider, MeterProvider and TextMapPropagator
// unless WithTracerProvider, WithMeterProvider or WithPropagators say
// otherwise; with none configured (the no-op globals) nothing is recorded
// and nothing breaks.
//
// lock.acquire (the wait) and lock.hold (acquisition to release or loss)
// are INTERNAL children of the request's span, and the handler's spans
// nest under lock.hold. A waiter's lock.acquire gets a lock.contended event
// and a link to the request span of each holder it met: the holder's span
// context is stored with the lock, as the propagator writes it or as W3C
// Trace Context when that writes nothing, so links need no propagator set
// up. A span's status is Error only when the lock could not do its job
// (unavailable, closed, misconfigured, bad key; a lost lease or a failed
// release), never for contention, a timeout or a caller that gave up.
//
// Metrics carry the lock's name, kind, outcome and error.type, never its
// key; the histograms' bucket boundaries are chosen for locks (100 µs to
// 68 s, six per decade). The observer does no I/O in the engine's calls;
// use a batching span processor (sdktrace.WithBatcher).
//
// The repository's docs/tracing.md is the reference: a complete setup with
// otelgin, otelhttp and otelgrpc (run by a test), the span tree and every
// attribute, the status rule, the metrics and their buckets, and a Grafana
// dashboard.
package otellock
