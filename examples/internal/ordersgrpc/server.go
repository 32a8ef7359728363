package ordersgrpc

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/grpclock"
)

// DefaultWait is how long PayOrder, RefundOrder and the streams wait for a
// busy order before they are answered codes.Aborted.
const DefaultWait = 5 * time.Second

// DefaultMaxHold is how long a call holds its order's lock at most: the
// streams' work takes milliseconds, so a stream still open at this bound
// is a client that stopped sending, and gives the order up.
const DefaultMaxHold = 30 * time.Second

// Config is what NewServer needs.
type Config struct {
	Client *core.Client // the lock service (required unless NoLock)
	Book   orders.Book  // the order book (the shared database)
	// Wait is the wait budget of PayOrder, RefundOrder, ImportLines and
	// ExportLines (0: DefaultWait). ShipOrder never waits.
	Wait time.Duration
	// MaxHold bounds how long any call holds its order's lock (0:
	// DefaultMaxHold): a stream that goes silent after its first message
	// frees the order then, whatever the client does (grpclock.MaxHold).
	MaxHold time.Duration
	// NoLock leaves the lock out: the baseline that shows what it prevents.
	// PayOrder's idempotency stays (NoLock removes locks only).
	NoLock bool
	// NoIdempotency leaves PayOrder's idempotency out: the baseline that
	// shows a retried payment applied twice. Without a Client there is
	// none either.
	NoIdempotency bool
	// Timeouts are the server's keepalive parameters (the zero value:
	// the examples' defaults, serve.Default), which bound a silent stream and a vanished client.
	Timeouts serve.Timeouts
	// Telemetry, when on, makes every call a server span
	// ("orders.v1.Orders/PayOrder", otelgrpc's stats handler), under which
	// the lock interceptors start lock.acquire and lock.hold (with otellock
	// on the lock Client), and records the RPC server metrics.
	Telemetry otelsetup.Instruments
}

// waiting and noWait are the unary RPCs that change an order (GetOrder only
// reads); streams are the streaming RPCs, each locking its order for its
// whole life. Reflection is a stream too and must not be locked: its
// messages have no LockKey (a lock on it would answer Internal).
var (
	waiting = map[string]bool{ordersv1.Orders_RefundOrder_FullMethodName: true}
	// paying is PayOrder: it waits for the lock too, behind its
	// idempotency.
	paying  = map[string]bool{ordersv1.Orders_PayOrder_FullMethodName: true}
	noWait  = map[string]bool{ordersv1.Orders_ShipOrder_FullMethodName: true}
	streams = map[string]bool{
		ordersv1.Orders_ImportLines_FullMethodName: true,
		ordersv1.Orders_ExportLines_FullMethodName: true,
	}
)

func methods(set map[string]bool) selector.Matcher {
	return selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool { return set[c.FullMethod()] })
}

// NewServer builds the gRPC server: the lock on the methods that change or
// export an order (chosen with go-grpc-middleware's selector; the key is
// each message's LockKey(), order:<id>): PayOrder and RefundOrder wait for
// it, ShipOrder (the duplicate click) does not; ImportLines and
// ExportLines wait for it and hold it for the whole stream, keyed by the
// stream's first message (grpclock.FromFirstMessage: the order id is in
// the messages, not in metadata). PayOrder runs once per idempotency key
// (metadata "idempotency-key", grpclock.Idempotent in front of its lock,
// or alone under NoLock; NoIdempotency leaves it out). Recovery sits
// inside the lock,
// reflection is on so grpcurl needs no .proto.
func NewServer(cfg Config) *grpc.Server {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.MaxHold <= 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	hold := grpclock.MaxHold(cfg.MaxHold)
	var chain []grpc.UnaryServerInterceptor
	var schain []grpc.StreamServerInterceptor
	// PayOrder runs once per idempotency key (metadata "idempotency-key"),
	// its record scoped by the order as HTTP's pay route is: a retry gets
	// the first call's response with "idempotent-replayed: true" and takes
	// no lock.
	once := !cfg.NoIdempotency && cfg.Client != nil
	scope := grpclock.IdempotencyScope(grpclock.Field("order_id"))
	switch {
	case once && cfg.NoLock:
		chain = append(chain, selector.UnaryServerInterceptor(grpclock.IdempotentUnaryServerInterceptor(cfg.Client, scope), methods(paying)))
	case once:
		chain = append(chain, selector.UnaryServerInterceptor(
			grpclock.UnaryServerInterceptor(cfg.Client, grpclock.Idempotent(scope), grpclock.Wait(cfg.Wait), hold), methods(paying)))
	case !cfg.NoLock:
		chain = append(chain, selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(cfg.Client, grpclock.Wait(cfg.Wait), hold), methods(paying)))
	}
	if !cfg.NoLock {
		chain = append(chain,
			// (authentication would go here, before the lock)
			selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(cfg.Client, grpclock.Wait(cfg.Wait), hold), methods(waiting)),
			selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(cfg.Client, grpclock.NoWait(), hold), methods(noWait)),
		)
		schain = append(schain, selector.StreamServerInterceptor(
			grpclock.StreamServerInterceptor(cfg.Client, grpclock.FromFirstMessage(), grpclock.Wait(cfg.Wait), hold), methods(streams)))
	}
	recovered := recovery.WithRecoveryHandler(func(p any) error { return status.Errorf(codes.Internal, "panic: %v", p) })
	chain = append(chain, recovery.UnaryServerInterceptor(recovered))
	schain = append(schain, recovery.StreamServerInterceptor(recovered))
	if cfg.Timeouts == (serve.Timeouts{}) {
		cfg.Timeouts = serve.Default
	}
	opts := append(cfg.Timeouts.GRPCOptions(), grpc.ChainUnaryInterceptor(chain...), grpc.ChainStreamInterceptor(schain...))
	if t := cfg.Telemetry; t.On() {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(t.TracerProvider),
			otelgrpc.WithMeterProvider(t.MeterProvider), otelgrpc.WithPropagators(t.Propagator))))
	}
	s := grpc.NewServer(opts...)
	ordersv1.RegisterOrdersServer(s, NewService(cfg.Book))
	reflection.Register(s)
	return s
}

// Serve serves s on lis until ctx ends, then stops gracefully: calls in
// flight get up to 10s to finish before the rest are cut.
func Serve(ctx context.Context, s *grpc.Server, lis net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
