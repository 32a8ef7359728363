// Command grpc is lockkit's gRPC example: an orders service whose PayOrder
// and RefundOrder run under the distributed lock order:<order_id> (the key
// the HTTP examples take for /orders/:id), on REDIS_URL or, when unset, an
// embedded miniredis.
//
//	go run ./examples/grpc                      # listens on 127.0.0.1:50051
//	grpcurl -plaintext -d '{"order_id":"42","amount_cents":1000}' 127.0.0.1:50051 orders.v1.Orders/PayOrder
//
// Server reflection is on, so grpcurl needs no .proto file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/grpclock"
)

func main() {
	addr := flag.String("addr", envOr("GRPC_ADDR", "127.0.0.1:50051"), "listen address (env GRPC_ADDR)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lis, err := net.Listen("tcp", *addr)
	if err == nil {
		err = serve(ctx, lis, os.Getenv("REDIS_URL"), time.Second, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc example:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// lockedMethods are the RPCs that change an order; GetOrder only reads.
var lockedMethods = map[string]bool{
	ordersv1.Orders_PayOrder_FullMethodName:    true,
	ordersv1.Orders_RefundOrder_FullMethodName: true,
}

// newServer builds the gRPC server: the lock on the methods that change an
// order (selected with go-grpc-middleware's selector; the key is each
// message's LockKey(), order:<id>), recovery inside it, reflection on.
func newServer(client *core.Client, svc ordersv1.OrdersServer) *grpc.Server {
	changesOrder := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return lockedMethods[c.FullMethod()]
	})
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(
		// (authentication would go here, before the lock)
		selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(client, grpclock.Wait(5*time.Second)), changesOrder),
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandler(func(p any) error {
			return status.Errorf(codes.Internal, "panic: %v", p)
		})),
	))
	ordersv1.RegisterOrdersServer(s, svc)
	reflection.Register(s)
	return s
}

// serve runs the service on lis until ctx ends. provider is how long the
// simulated payment provider takes.
func serve(ctx context.Context, lis net.Listener, redisURL string, provider time.Duration, out io.Writer) error {
	rdb, desc, cleanup, err := openRedis(redisURL)
	if err != nil {
		lis.Close()
		return err
	}
	defer cleanup()
	client, err := core.New(rdb)
	if err != nil {
		lis.Close()
		return err
	}
	defer client.Close()

	s := newServer(client, newOrders(provider))
	fmt.Fprintf(out, "orders gRPC server listening on %s (locks on %s)\n", lis.Addr(), desc)
	fmt.Fprintf(out, "try: grpcurl -plaintext -d '{\"order_id\":\"42\",\"amount_cents\":1000}' %s orders.v1.Orders/PayOrder\n", lis.Addr())
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		s.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
