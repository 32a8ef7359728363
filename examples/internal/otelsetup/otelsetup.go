// Package otelsetup is the OpenTelemetry pipeline every example builds the
// same way, from the standard environment variables, so an example is
// pointed at Jaeger, at a traces-only backend or at Prometheus without a
// flag of its own:
//
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES   the resource (service.name, service.instance.id, ...)
//	OTEL_TRACES_EXPORTER    otlp | console | none
//	OTEL_METRICS_EXPORTER   otlp | prometheus | console | none
//	OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT
//	OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL   http/protobuf (default) | grpc
//	OTEL_EXPORTER_PROMETHEUS_HOST, OTEL_EXPORTER_PROMETHEUS_PORT   where prometheus serves /metrics (localhost:9464)
//
// The exporters are go.opentelemetry.io/contrib/exporters/autoexport's,
// with one difference in the defaults: autoexport exports OTLP to
// localhost when nothing is set, an example does not. A signal is
// exported when its OTEL_<SIGNAL>_EXPORTER is set, or when an OTLP
// endpoint for it is (OTEL_EXPORTER_OTLP_ENDPOINT for both, the
// per-signal one for that signal alone: a traces-only backend gets
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and no metrics are sent anywhere).
// When no OTEL_* exporter or endpoint variable is set at all, nothing is
// exported, or everything is written to the writer of Fallback (the otel
// example's stdout).
//
// service.name is OTEL_SERVICE_NAME, else the one in
// OTEL_RESOURCE_ATTRIBUTES, else the example's own (ServiceName).
// service.instance.id is the one in OTEL_RESOURCE_ATTRIBUTES, else
// InstanceID's, else a random one: two replicas of one service are told
// apart.
//
// Exporting is never what decides whether an example worked: an export
// that fails (a backend that is down, or has no metrics endpoint) is a
// "warning: ..." line on the Warnings writer, a bounded number of them,
// and so is an error while flushing at Shutdown.
package otelsetup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Option configures Setup.
type Option func(*config)

type config struct {
	service, instance string
	fallback          io.Writer
	warnings          io.Writer
	processors        []sdktrace.SpanProcessor
	readers           []sdkmetric.Reader
	interval          time.Duration
}

// ServiceName is the example's service.name when neither OTEL_SERVICE_NAME
// nor OTEL_RESOURCE_ATTRIBUTES names one.
func ServiceName(name string) Option { return func(c *config) { c.service = name } }

// InstanceID is the service.instance.id when OTEL_RESOURCE_ATTRIBUTES has
// none (default: a random one).
func InstanceID(id string) Option { return func(c *config) { c.instance = id } }

// Fallback writes spans and metrics to w as JSON lines when no OTEL_*
// exporter or endpoint variable is set (default: nothing is exported). The
// span and the metric exporter write to w one at a time: Shutdown flushes
// both at once, and w need not be safe for concurrent use.
func Fallback(w io.Writer) Option { return func(c *config) { c.fallback = &lockedWriter{w: w} } }

// lockedWriter serialises the writes of several exporters to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Warnings is where export errors go (default os.Stderr).
func Warnings(w io.Writer) Option { return func(c *config) { c.warnings = w } }

// SpanProcessor adds p to every TracerProvider of the Telemetry, whatever
// is exported: the otel example's span tree, a test's in-memory recorder.
func SpanProcessor(p sdktrace.SpanProcessor) Option {
	return func(c *config) { c.processors = append(c.processors, p) }
}

// MetricReader adds r to the MeterProvider, whatever is exported.
func MetricReader(r sdkmetric.Reader) Option {
	return func(c *config) { c.readers = append(c.readers, r) }
}

// MetricInterval is how often a push exporter (OTLP, console) sends
// metrics (default: OTEL_METRIC_EXPORT_INTERVAL, else the SDK's 60s; the
// rest is sent at Shutdown). It applies only to the Fallback exporter:
// autoexport's readers read the standard variable themselves.
func MetricInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// Telemetry is one process's pipeline: its resource, one span exporter
// shared by every TracerProvider it makes (one per replica, each with its
// own service.instance.id), and one MeterProvider (a Prometheus endpoint
// is bound once per process).
type Telemetry struct {
	cfg      config
	res      *resource.Resource
	instance string
	spanExp  sdktrace.SpanExporter // nil: spans are not exported
	mp       *sdkmetric.MeterProvider
	warn     *warner

	// Traces and Metrics say where each signal goes, for a banner:
	// "none", "stdout", "OTLP/HTTP http://localhost:4318",
	// "Prometheus at http://localhost:9464/metrics".
	Traces, Metrics string

	mu   sync.Mutex
	tps  []*sdktrace.TracerProvider
	done bool
}

// Setup builds the Telemetry from the environment. It installs an
// otel.SetErrorHandler that turns export errors into warnings (the SDK's
// exporters report through it); the global providers are left alone.
// Shutdown flushes and stops everything.
func Setup(ctx context.Context, opts ...Option) (*Telemetry, error) {
	cfg := config{warnings: os.Stderr}
	for _, o := range opts {
		o(&cfg)
	}
	t := &Telemetry{cfg: cfg, warn: newWarner(cfg.warnings)}
	var err error
	if t.res, t.instance, err = buildResource(ctx, cfg.service, cfg.instance); err != nil {
		return nil, err
	}
	otel.SetErrorHandler(t.warn)

	useFallback := !anySet()
	if t.spanExp, t.Traces, err = spanExporter(ctx, cfg, useFallback); err != nil {
		return nil, fmt.Errorf("traces exporter: %w", err)
	}
	reader, what, err := metricReader(ctx, cfg, useFallback)
	if err != nil {
		if t.spanExp != nil {
			_ = t.spanExp.Shutdown(ctx)
		}
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	t.Metrics = what
	mopts := []sdkmetric.Option{sdkmetric.WithResource(t.res)}
	if reader != nil {
		mopts = append(mopts, sdkmetric.WithReader(reader))
	}
	for _, r := range cfg.readers {
		mopts = append(mopts, sdkmetric.WithReader(r))
	}
	if reader != nil || len(cfg.readers) > 0 {
		t.mp = sdkmetric.NewMeterProvider(mopts...)
	}
	return t, nil
}

// Resource is the process's resource.
func (t *Telemetry) Resource() *resource.Resource { return t.res }

// InstanceID is the process's service.instance.id.
func (t *Telemetry) InstanceID() string { return t.instance }

// Enabled reports whether anything records spans or metrics: when not, an
// example can leave its instrumentation out.
func (t *Telemetry) Enabled() bool {
	return t.spanExp != nil || len(t.cfg.processors) > 0 || t.mp != nil
}

// MeterProvider is the process's one MeterProvider (a no-op one when no
// metrics are read).
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t.mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.mp
}

// Propagator is W3C Trace Context and Baggage: what the server
// instrumentation reads from a request and otellock writes into a lock's
// holder metadata.
func (t *Telemetry) Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// TracerProvider returns a new TracerProvider on the shared exporter (and
// the SpanProcessor options), with the process's resource; instanceID,
// when not empty, replaces its service.instance.id (one replica of
// several in one process). It is a no-op provider when spans go nowhere.
// Shutdown shuts it down.
func (t *Telemetry) TracerProvider(instanceID string) trace.TracerProvider {
	if t.spanExp == nil && len(t.cfg.processors) == 0 {
		return tracenoop.NewTracerProvider()
	}
	res := t.res
	if instanceID != "" {
		if r, err := resource.Merge(t.res, resource.NewSchemaless(semconv.ServiceInstanceID(instanceID))); err == nil {
			res = r
		}
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if t.spanExp != nil {
		// Batching: exporting never runs inside the lock engine's calls.
		opts = append(opts, sdktrace.WithBatcher(keepOpen{t.spanExp}))
	}
	for _, p := range t.cfg.processors {
		opts = append(opts, sdktrace.WithSpanProcessor(keepOpen2{p}))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t.mu.Lock()
	t.tps = append(t.tps, tp)
	t.mu.Unlock()
	return tp
}

// DefaultShutdownTimeout bounds Shutdown when its context has no deadline.
const DefaultShutdownTimeout = 10 * time.Second

// Shutdown flushes and stops every TracerProvider, the MeterProvider and
// the exporters, by ctx's deadline (DefaultShutdownTimeout from now when
// it has none). An export still in flight then, to a backend that does not
// answer, is abandoned: the exporters are shut down with the expired
// context, which ends their exports and connections. What fails is a
// warning, not an error: the example's own result stands. cut reports
// that the deadline ended the flush, so some spans or metrics were not
// sent. Later export errors are no longer written to the Warnings writer.
func (t *Telemetry) Shutdown(ctx context.Context) (cut bool) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultShutdownTimeout)
		defer cancel()
	}
	t.mu.Lock()
	tps, done := t.tps, t.done
	t.tps, t.done = nil, true
	t.mu.Unlock()
	if done {
		return false
	}
	start := time.Now()
	// Everything flushes at once, each with the whole time to the
	// deadline. The TracerProviders are shut down on a context that does
	// not end (one given an ended context returns without stopping its
	// batcher, whose goroutine would be left behind): their batchers' last
	// exports end when the exporter is shut down below.
	var mu sync.Mutex // errs: the flushes add theirs as they end
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, tp := range tps {
		wg.Go(func() { fail(tp.Shutdown(context.WithoutCancel(ctx))) })
	}
	for _, p := range t.cfg.processors {
		wg.Go(func() { fail(p.Shutdown(ctx)) })
	}
	if t.mp != nil {
		wg.Go(func() { fail(t.mp.Shutdown(ctx)) })
	}
	flushed := make(chan struct{})
	go func() { wg.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-ctx.Done():
	}
	cut = ctx.Err() != nil
	// The span exporter goes last: past the deadline, its shutdown with
	// the ended context ends the exports still in flight, the batchers'
	// last ones with them.
	if t.spanExp != nil {
		fail(t.spanExp.Shutdown(ctx))
	}
	select {
	case <-flushed:
	case <-time.After(time.Second): // an exporter that ignores its shutdown: give up on it
		fail(errors.New("an exporter did not stop within a second of its shutdown"))
	}
	mu.Lock()
	err := joinDistinct(errs, cut)
	mu.Unlock()
	if cut {
		msg := fmt.Sprintf("cut at the shutdown deadline after %v, some spans or metrics not sent", time.Since(start).Round(time.Millisecond))
		if err != nil {
			err = fmt.Errorf("%s: %w", msg, err)
		} else {
			err = errors.New(msg)
		}
	}
	if err != nil {
		t.warn.Handle(fmt.Errorf("flushing telemetry: %w", err))
	}
	t.warn.close()
	return cut
}

// joinDistinct joins errs, each message once: the providers sharing one
// exporter fail alike, and five "context deadline exceeded" on one line
// say nothing four of them do not. cut: the deadline ended the flush,
// which the caller says; the bare deadline errors are left out.
func joinDistinct(errs []error, cut bool) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil || seen[err.Error()] || (cut && err.Error() == context.DeadlineExceeded.Error()) {
			continue
		}
		seen[err.Error()] = true
		out = append(out, err)
	}
	return errors.Join(out...)
}

// keepOpen shares one exporter among several batchers: theirs is not
// the last word on it, Telemetry.Shutdown is.
type keepOpen struct{ sdktrace.SpanExporter }

func (keepOpen) Shutdown(context.Context) error { return nil }

// keepOpen2 is keepOpen for a processor shared by several providers.
type keepOpen2 struct{ sdktrace.SpanProcessor }

func (keepOpen2) Shutdown(context.Context) error { return nil }

// newInstanceID is a random service.instance.id.
func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// buildResource: the example's defaults first, the environment over them.
func buildResource(ctx context.Context, service, instance string) (*resource.Resource, string, error) {
	var defaults []attribute.KeyValue
	if service != "" {
		defaults = append(defaults, semconv.ServiceName(service))
	}
	if instance == "" {
		instance = newInstanceID()
	}
	defaults = append(defaults, semconv.ServiceInstanceID(instance))
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(defaults...),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME over it
	)
	if err != nil && res == nil {
		return nil, "", fmt.Errorf("resource: %w", err)
	}
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: the rest still holds.
		fmt.Fprintf(os.Stderr, "warning: resource: %v\n", err)
	}
	if v, ok := res.Set().Value(semconv.ServiceInstanceIDKey); ok {
		instance = v.AsString()
	}
	return res, instance, nil
}

// stdoutMetrics is the Fallback metrics reader.
func stdoutMetrics(w io.Writer, interval time.Duration) (sdkmetric.Reader, error) {
	exp, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, err
	}
	var ropts []sdkmetric.PeriodicReaderOption
	if interval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(interval))
	}
	return sdkmetric.NewPeriodicReader(exp, ropts...), nil
}

// Warnings is how many export errors were reported so far.
func (t *Telemetry) Warnings() int { return t.warn.count() }
