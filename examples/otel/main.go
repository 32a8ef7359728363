// Command otel shows lockkit's OpenTelemetry instrumentation (otellock) on a
// gin service instrumented with otelgin.
//
// Two replicas of an order service lock order:<id> around
// POST /orders/:id/pay. The program sends one request to each replica for
// the same order, so the second waits for the first, then prints the spans
// and metrics. The waiter's lock.acquire span carries a link to the holder's
// lock.acquire span, in the holder's trace: a tracing UI jumps from "why was
// this request slow" to "who held the lock".
//
//	go -C examples run ./otel                    # embedded Redis, spans and metrics to stdout
//	REDIS_URL=redis://localhost:6379/0 go -C examples run ./otel
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go -C examples run ./otel
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc go -C examples run ./otel
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://localhost:4318/v1/traces go -C examples run ./otel   # a traces-only backend (Jaeger)
//
// Telemetry follows the standard OpenTelemetry variables (see otelsetup):
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES for the resource
// (service.name lockkit-otel-example otherwise, a random
// service.instance.id), OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER
// (otlp, console, none; prometheus for metrics), the OTLP endpoints
// (OTEL_EXPORTER_OTLP_ENDPOINT, or per signal
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and _METRICS_ENDPOINT) and
// OTEL_EXPORTER_OTLP_PROTOCOL. When none of them is set, spans and metrics
// are written to stdout as JSON lines; when some are, a signal nothing
// names is not exported. Either way a summary follows: the span tree of
// both requests and the lockkit metrics. An export that fails (a backend
// without a metrics endpoint) is a warning on stderr: the exit status is
// 1 only when the example itself could not run.
//
// As in every example, REDIS_URL is the Redis; this one has no flags, and
// its replicas listen on loopback ports of its choosing (no ADDR).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/otellock"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "otel example:", err)
		os.Exit(1)
	}
}

// result is what run observed, for the test.
type result struct {
	spans   []sdktrace.ReadOnlySpan
	metrics []metricLine
	status  [2]int
}

// run is the example; export errors are warnings on errOut, not errors.
func run(ctx context.Context, out, errOut io.Writer) (res *result, err error) {
	gin.SetMode(gin.ReleaseMode)
	tel, err := setupTelemetry(ctx, out, errOut)
	if err != nil {
		return nil, err
	}
	defer func() {
		if tel != nil {
			tel.shutdown(context.WithoutCancel(ctx))
		}
	}()
	rs, err := embedded.Open(ctx, os.Getenv(embedded.EnvURL))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	fmt.Fprintf(out, "# lockkit otel example: locks on %s, telemetry to %s\n", rs.Desc, tel.target)

	// Both replicas use otellock.New() with no options: the global providers
	// and propagator set up above.
	hooks := newDemoHooks()
	r1, err := startReplica("replica-1", rs, otellock.New(), hooks)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r1.stop(context.WithoutCancel(ctx))) }()
	r2, err := startReplica("replica-2", rs, hooks.observer(otellock.New()), hooks)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r2.stop(context.WithoutCancel(ctx))) }()

	res = &result{}
	if res.status, err = contendedPair(ctx, out, r1, r2, hooks); err != nil {
		return nil, err
	}
	if err := r1.stop(ctx); err != nil {
		return nil, err
	}
	if err := r2.stop(ctx); err != nil {
		return nil, err
	}
	if res.metrics, err = collectMetrics(ctx, tel); err != nil {
		return nil, err
	}
	shut := tel
	tel = nil
	shut.shutdown(ctx) // flushes the exporters
	res.spans = shut.spans.Ended()
	fmt.Fprintln(out)
	printTree(out, res.spans)
	fmt.Fprintln(out)
	printMetrics(out, res.metrics)
	return res, nil
}

// contendedPair sends POST /orders/42/pay to replica 1 and, once that
// request holds the lock, the same to replica 2, which waits for it.
func contendedPair(ctx context.Context, out io.Writer, r1, r2 *replica, hooks *demoHooks) ([2]int, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	type reply struct {
		status int
		body   string
		err    error
	}
	post := func(url string, ch chan<- reply) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- reply{status: resp.StatusCode, body: string(b), err: err}
	}
	a, b := make(chan reply, 1), make(chan reply, 1)
	go post(r1.url+"/orders/42/pay", a)
	select {
	case <-hooks.held:
	case ra := <-a:
		return [2]int{}, fmt.Errorf("first request ended before holding the lock: %d %s %v", ra.status, ra.body, ra.err)
	case <-time.After(20 * time.Second):
		return [2]int{}, errors.New("first request never held the lock")
	}
	go post(r2.url+"/orders/42/pay", b)
	ra, rb := <-a, <-b
	if ra.err != nil || rb.err != nil {
		return [2]int{}, errors.Join(ra.err, rb.err)
	}
	fmt.Fprintf(out, "# holder: %s %d %s\n", r1.name, ra.status, ra.body)
	fmt.Fprintf(out, "# waiter: %s %d %s\n", r2.name, rb.status, rb.body)
	return [2]int{ra.status, rb.status}, nil
}
