package main

import (
	"context"
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
	addr := quicktest.Start(t, serve, newServer(srv.Client(), g.Work))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	quicktest.Run(t, srv.Client(), g, quicktest.Calls{
		Pay: func(ctx context.Context) (int64, error) {
			token := new(wrapperspb.Int64Value)
			err := conn.Invoke(ctx, "/orders.v1.Orders/Pay", wrapperspb.String("42"), token)
			return token.GetValue(), err
		},
	})
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }
