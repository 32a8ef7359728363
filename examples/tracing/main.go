// Command tracing is docs/tracing.md's setup as a program: the
// OpenTelemetry SDK with the stdout exporters, otellock on the lock Client
// of two replicas, and one payment of order 42 on each, the second made
// while the first holds the lock, so that it waits. The exporters print
// the spans, then the metrics, as JSON lines: replica-2's lock.acquire
// span has a lock.contended event and a link to replica-1's "pay" span,
// the request that held the lock.
//
//	go -C examples run ./tracing
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./tracing
//
// Its tests hold the rest of the setup, the server instrumentation of gin
// (otelgin), net/http (otelhttp) and gRPC (otelgrpc), and
// TestHolderLinkThroughTheSetup shows that through it too a waiter's
// lock.acquire span links to the request span of the holder it waited
// for.
//
// As in every example, REDIS_URL is the Redis (an embedded one when it is
// unset); this one has no flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/otellock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv(embedded.EnvURL), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracing example:", err)
		os.Exit(1)
	}
}

// setupProviders installs the tracer and meter providers, exporting to w,
// and the propagator, and returns what flushes and stops them at exit.
func setupProviders(w io.Writer) (func(context.Context) error, error) {
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(w)) // w: os.Stdout, in main
	if err != nil {
		return nil, err
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, err
	}
	reader := sdkmetric.NewPeriodicReader(metrics) // every minute, and at shutdown
	res := resource.NewSchemaless(attribute.String("service.name", "orders"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }, nil
}

// newLocks is the lock Client, reporting to the global providers.
func newLocks(rdb redis.UniversalClient, owner string) (*core.Client, error) {
	return core.New(rdb, core.WithOwner(owner), core.WithObserver(otellock.New()))
}

// run pays order 42 on two replicas, the second while the first holds it,
// and writes the spans and metrics to out when the providers shut down.
func run(ctx context.Context, redisURL string, out io.Writer) (err error) {
	shutdown, err := setupProviders(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, shutdown(context.WithoutCancel(ctx))) }()
	rs, err := embedded.Open(ctx, redisURL)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	fmt.Fprintf(out, "# order 42 paid on two replicas, locks on %s; the spans, then the metrics, as the stdout exporters write them:\n", rs.Desc)
	replica := func(owner string) (*core.Client, func(), error) {
		rdb := rs.NewClient() // each replica its own connections
		locks, err := newLocks(rdb, owner)
		if err != nil {
			return nil, nil, errors.Join(err, rdb.Close())
		}
		return locks, func() { _ = locks.Close(); _ = rdb.Close() }, nil
	}
	holder, closeHolder, err := replica("replica-1")
	if err != nil {
		return err
	}
	defer closeHolder()
	waiter, closeWaiter, err := replica("replica-2")
	if err != nil {
		return err
	}
	defer closeWaiter()

	// Replica-1 holds order 42 until replica-2's payment waits for it (its
	// Client sees the lock held by replica-1, with a waiter): the second
	// payment always meets the first.
	holding := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- pay(ctx, holder, func(ctx context.Context) error {
			close(holding)
			return waitFor(ctx, func() bool { return waits(waiter, "order:42", "replica-1") })
		})
	}()
	select {
	case <-holding:
	case err := <-first:
		return fmt.Errorf("replica-1: %w", err)
	}
	if err := pay(ctx, waiter, func(context.Context) error { return nil }); err != nil {
		return fmt.Errorf("replica-2: %w", err)
	}
	if err := <-first; err != nil {
		return fmt.Errorf("replica-1: %w", err)
	}
	return nil
}

// pay is one request for order 42: a span, as a server's instrumentation
// starts for each request, and work under the lock inside it.
func pay(ctx context.Context, locks *core.Client, work func(context.Context) error) error {
	ctx, span := otel.Tracer("orders").Start(ctx, "pay")
	defer span.End()
	return locks.Do(ctx, "order:42", work, core.Wait(10*time.Second))
}

// waits says whether locks has a caller waiting for key, held by owner.
func waits(locks *core.Client, key, owner string) bool {
	for _, l := range locks.Locks() {
		if l.Key == key && l.Waiters > 0 && l.Holder.Owner == owner {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
