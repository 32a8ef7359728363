package main

import (
	"context"
	"net"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/examples/quickstart/internal/quicktest"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program's server: two payments of order 42 take turns.
func TestOneOrderAtATime(t *testing.T) {
	srv := locktest.New(t)
	g := quicktest.NewGate(t)
	conn := start(t, newServer(srv.Client(), g.Work))
	quicktest.Run(t, srv.Client(), g, quicktest.Calls{
		Pay: func(ctx context.Context) (int64, error) {
			token := new(wrapperspb.Int64Value)
			err := conn.Invoke(ctx, "/orders.v1.Orders/Pay", wrapperspb.String("42"), token)
			return token.GetValue(), err
		},
	})
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }

// start serves s with the program's serve until the test ends, and returns
// a connection to it.
func start(t *testing.T, s *grpc.Server) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis, s) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return conn
}
