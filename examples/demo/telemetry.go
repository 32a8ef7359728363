package main

import (
	"context"
	"fmt"
	"io"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
)

// serviceName is the demo's service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) names another.
const serviceName = "lockkit-demo"

// hooks are the tests' ways into a run; a real run has none.
type hooks struct {
	// spans gets every span of every replica (an in-memory recorder).
	spans sdktrace.SpanProcessor
	// loaded runs when the clients are done and before the replicas and
	// the telemetry stop: the demo is still up (its metrics endpoint too).
	loaded func()
	// lockView gets the lock view's URL once it serves.
	lockView func(url string)
	// keepGoing, once the run's duration and -each are met, is asked
	// (every 250ms) whether the clients should go on: a test's condition
	// on what watches the run (Prometheus's scrapes).
	keepGoing func() bool
	// flushed gets whether the telemetry's flush was cut at its deadline,
	// shutdownGrace past the load.
	flushed func(cut bool)
}

// shutdownGrace is the deadline of the demo's telemetry flush, counted
// from the load's end: an exporter whose backend does not answer is cut
// off then (the run ends a few tens of ms later), its unsent spans and
// metrics a warning.
const shutdownGrace = 1500 * time.Millisecond

// setupTelemetry is the demo's OpenTelemetry pipeline, from the standard
// variables (see otelsetup): one MeterProvider for the process, so a
// Prometheus endpoint is bound once, and a TracerProvider per replica
// (replicaTelemetry). It says on out where spans and metrics go; export
// errors are warnings on errOut.
func setupTelemetry(ctx context.Context, h hooks, out, errOut io.Writer) (*otelsetup.Telemetry, error) {
	opts := []otelsetup.Option{otelsetup.ServiceName(serviceName), otelsetup.Warnings(errOut)}
	if h.spans != nil {
		opts = append(opts, otelsetup.SpanProcessor(h.spans))
	}
	tel, err := otelsetup.Setup(ctx, opts...)
	if err != nil {
		return nil, err
	}
	if tel.Traces != "none" || tel.Metrics != "none" {
		fmt.Fprintf(out, "telemetry: traces to %s, metrics to %s (service.instance.id %s-<replica>)\n", tel.Traces, tel.Metrics, tel.InstanceID())
	}
	return tel, nil
}

// replicaTelemetry is what one replica instruments its server and its lock
// Client with.
type replicaTelemetry struct {
	// server: the replica's own TracerProvider (its own
	// service.instance.id), the process's MeterProvider; zero when nothing
	// records telemetry.
	server otelsetup.Instruments
	// lock is otellock on the same providers (nil when nothing records
	// telemetry): lock.acquire and lock.hold under the request's span,
	// with a link from a waiter to its holder's trace, and the lock's
	// metrics.
	lock core.Observer
}

// forReplica makes replica name's telemetry: its spans carry
// service.instance.id <process id>-<name>, as if it were its own process.
func forReplica(tel *otelsetup.Telemetry, name string) replicaTelemetry {
	rt := replicaTelemetry{server: tel.Instruments(tel.InstanceID() + "-" + name)}
	rt.lock = otelsetup.LockObserver(rt.server)
	return rt
}
