package connectlock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

// PayOrder locked per order: while one client's call pays order 42, a
// second client's call for the same order is answered Aborted with a retry
// hint (NoWait), and its handler does not run.
func Example() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	const payOrder = "/orders.v1.Orders/PayOrder"
	paying, paid := make(chan struct{}), make(chan struct{})
	pay := func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		lease, _ := core.LeaseFromContext(ctx) // write with lease.Token()
		fmt.Println("paying under", lease.Key())
		close(paying)
		<-paid
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
	mux := http.NewServeMux()
	mux.Handle(payOrder, connect.NewUnaryHandler(payOrder, pay, connect.WithInterceptors(
		connectlock.UnaryInterceptor(locks, connectlock.Key(connectlock.Const("order"), connectlock.Field("value")), connectlock.NoWait()),
	)))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	first := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hs.Client(), hs.URL+payOrder)
	second := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hs.Client(), hs.URL+payOrder)

	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := first.CallUnary(ctx, connect.NewRequest(wrapperspb.String("42")))
		done <- err
	}()
	<-paying // the first client holds order:42

	_, err = second.CallUnary(ctx, connect.NewRequest(wrapperspb.String("42")))
	var ce *connect.Error
	if errors.As(err, &ce) {
		for _, d := range ce.Details() {
			if v, _ := d.Value(); v != nil {
				if ri, ok := v.(*errdetails.RetryInfo); ok {
					fmt.Println(ce.Code(), "retry after", ri.GetRetryDelay().AsDuration())
				}
			}
		}
	}
	close(paid)
	fmt.Println("first client:", <-done)
	hs.Client().CloseIdleConnections()
	// Output:
	// paying under order:42
	// aborted retry after 1s
	// first client: <nil>
}
