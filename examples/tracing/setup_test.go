// The server instrumentation of docs/tracing.md's setup, which its tests
// wire with the program's setupProviders and newLocks
// (TestHolderLinkThroughTheSetup).

package main

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/httplock"
)

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
