package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/examples/quickstart/internal/quicktest"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program's procedures and server: two payments of order 42 take
// turns, and a shipment meanwhile is answered aborted.
func TestOneOrderAtATime(t *testing.T) {
	srv := locktest.New(t)
	g := quicktest.NewGate(t)
	base := "http://" + quicktest.Start(t, serve, routes(srv.Client(), g.Work))
	pay := connect.NewClient[wrapperspb.StringValue, wrapperspb.Int64Value](http.DefaultClient, base+"/orders.v1.Orders/Pay")
	ship := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient, base+"/orders.v1.Orders/Ship")
	quicktest.Run(t, srv.Client(), g, quicktest.Calls{
		Pay: func(ctx context.Context) (int64, error) {
			resp, err := pay.CallUnary(ctx, connect.NewRequest(wrapperspb.String("42")))
			if err != nil {
				return 0, err
			}
			return resp.Msg.GetValue(), nil
		},
		Refused: func(ctx context.Context) error {
			_, err := ship.CallUnary(ctx, connect.NewRequest(wrapperspb.String("42")))
			if connect.CodeOf(err) != connect.CodeAborted {
				return fmt.Errorf("Ship: %v, want aborted", err)
			}
			return nil
		},
	})
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }
