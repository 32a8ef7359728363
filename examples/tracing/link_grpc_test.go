package main

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
)

// serveGRPC serves a replica's Orders service on grpcServer, on a loopback
// listener, until the test ends; its client is a plain one (the doc sets
// up servers only), so each call's server span is the root of a trace.
// PayOrder{order_id: 42} locks order:42, its LockKey().
func serveGRPC(t *testing.T, locks *core.Client, g *gate) payer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpcServer(locks)
	ordersv1.RegisterOrdersServer(s, payOrders{g: g})
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	orders := ordersv1.NewOrdersClient(conn)
	return func(ctx context.Context) error {
		_, err := orders.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "42", AmountCents: 100})
		return err
	}
}

// payOrders' PayOrder passes the gate, under the lock grpcServer's
// interceptor took.
type payOrders struct {
	ordersv1.UnimplementedOrdersServer
	g *gate
}

func (p payOrders) PayOrder(ctx context.Context, _ *ordersv1.PayOrderRequest) (*ordersv1.PayOrderResponse, error) {
	p.g.pass(ctx)
	return &ordersv1.PayOrderResponse{}, nil
}
