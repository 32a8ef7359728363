package connectlock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Limit(0) is the key's mutex, the lock of an interceptor without Limit
// (CodeAborted while it is held); Limit(1) is a semaphore of one permit,
// another lock (CodeResourceExhausted while that is held): see
// testkit.LimitZeroIsTheMutex.
func TestLimitZeroIsTheMutex(t *testing.T) {
	srv := redistest.Start(t)
	client := testkit.Client(t, srv.NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	export := func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
	procedures := map[string]string{testkit.LimitZero: "/t.v1.T/Zero", testkit.NoLimit: "/t.v1.T/None", testkit.LimitOne: "/t.v1.T/One"}
	mux := http.NewServeMux()
	for route, kind := range map[string][]connectlock.Option{testkit.LimitZero: {connectlock.Limit(0)}, testkit.NoLimit: nil, testkit.LimitOne: {connectlock.Limit(1)}} {
		lock := connectlock.UnaryInterceptor(client, append(kind, connectlock.Key(connectlock.Const("export"), connectlock.Field("value")), connectlock.NoWait())...)
		mux.Handle(procedures[route], connect.NewUnaryHandler(procedures[route], export, connect.WithInterceptors(lock)))
	}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	t.Cleanup(hs.Client().CloseIdleConnections)
	testkit.LimitZeroIsTheMutex(t, ctx, client, "export:t1", func(route string) core.Outcome {
		call := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hs.Client(), hs.URL+procedures[route])
		_, err := call.CallUnary(ctx, connect.NewRequest(wrapperspb.String("t1")))
		switch {
		case err == nil:
			return core.OutcomeAcquired
		case connect.CodeOf(err) == connect.CodeAborted:
			return core.OutcomeContended
		case connect.CodeOf(err) == connect.CodeResourceExhausted:
			return core.OutcomeLimited
		}
		return 0
	})
}
