package connectlock_test

import (
	"github.com/lockkit/lockkit/guard/rpckey"

	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/locktest"
)

// A key part naming a field the message does not have answers
// CodeInternal to every call, and says why once per procedure, through
// the logger.
func TestMisconfigurationIsLoggedOncePerProcedure(t *testing.T) {
	srv := locktest.New(t)
	logs := &testkit.Logs{}
	lock := connectlock.UnaryInterceptor(srv.Client(), connectlock.Key(connectlock.Const("acct"), connectlock.Field("account")),
		connectlock.Logger(slog.New(slog.NewTextHandler(logs, nil))))
	ok := func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
	procs := []string{"/t.v1.T/Deposit", "/t.v1.T/Withdraw"}
	mux := http.NewServeMux()
	for _, p := range procs {
		mux.Handle(p, connect.NewUnaryHandler(p, ok, connect.WithInterceptors(lock)))
	}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	t.Cleanup(hs.Client().CloseIdleConnections)
	for range 5 {
		for _, p := range procs {
			_, err := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hs.Client(), hs.URL+p).CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("1")))
			if connect.CodeOf(err) != connect.CodeInternal {
				t.Fatalf("%s: %v, want internal", p, err)
			}
		}
	}
	for _, p := range procs {
		if n := logs.Count("misconfigured", "procedure="+rpckey.Name(p)+" ", "account"); n != 1 {
			t.Errorf("%s logged %d times, want once: %d lines", p, n, logs.Count())
		}
	}
}
