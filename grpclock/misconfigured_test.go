package grpclock_test

import (
	"github.com/lockkit/lockkit/guard/rpckey"

	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/grpclog"

	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A key part naming a field the message does not have answers Internal to
// every call, and says why once per method, through gRPC's logger
// (grpclog).
func TestMisconfigurationIsLoggedOncePerMethod(t *testing.T) {
	logs := captureGRPCLog(t)
	srv := redistest.Start(t)
	cl := serve(t, &service{}, unary(newClient(t, srv), grpclock.Key(grpclock.Const("acct"), grpclock.Field("account"))))
	ctx := testkit.Context(t, 30*time.Second)
	for range 5 {
		_, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "1"})
		wantCode(t, err, codes.Internal)
		_, err = cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "1"})
		wantCode(t, err, codes.Internal)
	}
	for _, method := range []string{testpb.Test_Pay_FullMethodName, testpb.Test_PayKeyed_FullMethodName} {
		if n := logs.Count("misconfigured", rpckey.Name(method)+":", "account"); n != 1 {
			t.Errorf("%s logged %d times, want once: %d lines", method, n, logs.Count())
		}
	}
}

// captureGRPCLog collects what gRPC's logger (grpclog) says at level Error
// until t ends.
func captureGRPCLog(t *testing.T) *testkit.Logs {
	logs := &testkit.Logs{}
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, logs))
	t.Cleanup(func() { grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard)) })
	return logs
}
