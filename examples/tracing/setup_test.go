// Package tracing holds docs/tracing.md's setup as code its test runs: the
// providers and propagator, otellock on the lock Client, and the server
// instrumentation of gin (otelgin), net/http (otelhttp) and gRPC
// (otelgrpc). TestHolderLinkThroughTheSetup shows that a waiter's
// lock.acquire span links to the request span of the holder it waited for.
package tracing

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/otellock"
)

// setupProviders installs the tracer and meter providers and the
// propagator, and returns what flushes and stops them at exit.
func setupProviders(exporter sdktrace.SpanExporter, reader sdkmetric.Reader) func(context.Context) error {
	res := resource.NewSchemaless(attribute.String("service.name", "orders"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }
}

// newLocks is the lock Client, reporting to the global providers.
func newLocks(rdb *redis.Client, owner string) (*core.Client, error) {
	return core.New(rdb, core.WithOwner(owner), core.WithObserver(otellock.New()))
}

// ginRoutes: otelgin first, so that the lock's spans are children of the
// request's server span.
func ginRoutes(locks *core.Client, pay gin.HandlerFunc) http.Handler {
	r := gin.New()
	r.Use(otelgin.Middleware("orders"))
	r.POST("/orders/:id/pay", ginlock.New(locks, ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))), pay)
	return r
}

// httpRoutes: otelhttp around the mux.
func httpRoutes(locks *core.Client, pay http.Handler) http.Handler {
	lock := httplock.New(locks, httplock.Key(httplock.Const("order"), httplock.Param("id")))
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", lock(pay))
	return otelhttp.NewHandler(mux, "orders")
}

// grpcServer: otelgrpc's stats handler.
func grpcServer(locks *core.Client) *grpc.Server {
	return grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler()),
		grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(locks)),
	)
}
