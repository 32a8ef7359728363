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

// A payment retried with the same Idempotency-Key runs once: the retry
// gets the first run's response, marked Idempotent-Replayed.
func ExampleIdempotentInterceptor() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()

	const payOrder = "/orders.v1.Orders/PayOrder"
	runs := 0
	pay := func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		runs++
		claim, _ := core.ClaimFromContext(ctx) // fence the payment's writes with claim.Token()
		return connect.NewResponse(wrapperspb.String(fmt.Sprintf("paid %s (run %d, fenced %v)", req.Msg.GetValue(), runs, claim.Token() > 0))), nil
	}
	mux := http.NewServeMux()
	mux.Handle(payOrder, connect.NewUnaryHandler(payOrder, pay, connect.WithInterceptors(
		connectlock.IdempotentInterceptor(locks, connectlock.IdempotencyRequired()))))
	hs := httptest.NewServer(mux)
	defer hs.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](hs.Client(), hs.URL+payOrder)
	for range 2 { // the client timed out and sends the same payment again
		req := connect.NewRequest(wrapperspb.String("order 42"))
		req.Header().Set("Idempotency-Key", "3f6c0e8e-pay-42")
		res, err := client.CallUnary(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s, replayed: %q\n", res.Msg.GetValue(), res.Header().Get("Idempotent-Replayed"))
	}
	// Output:
	// paid order 42 (run 1, fenced true), replayed: ""
	// paid order 42 (run 1, fenced true), replayed: "true"
}
