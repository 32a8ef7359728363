package grpclock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Field paths, run through the unary interceptor itself: the key the
// handler's lease carries, or the code and message the caller gets.
func TestFieldPaths(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	full := &testpb.PayRequest{
		OrderId: "o-1",
		Order: &testpb.Order{Id: "inner-7", Number: -42, Customer: &testpb.Customer{
			AccountId: "acc:9", Shard: 3,
		}},
		Region:        testpb.Region_REGION_EU,
		AccountNumber: 1234567890123,
		Priority:      proto.Int32(0),
		TenantName:    "acme",
	}
	for _, tc := range []struct {
		name string
		path string
		msg  any
		key  string // want this key (after Const("x"))
		code codes.Code
		msg2 string // part of the error message
	}{
		{"top-level string", "order_id", full, "x:o-1", codes.OK, ""},
		{"nested", "order.id", full, "x:inner-7", codes.OK, ""},
		{"nested twice, escaped", "order.customer.account_id", full, `x:acc\:9`, codes.OK, ""},
		{"int64", "order.number", full, "x:-42", codes.OK, ""},
		{"uint32", "order.customer.shard", full, "x:3", codes.OK, ""},
		{"enum by name", "region", full, "x:REGION_EU", codes.OK, ""},
		{"optional zero is a value", "priority", full, "x:0", codes.OK, ""},
		{"large int", "account_number", full, "x:1234567890123", codes.OK, ""},
		{"JSON name", "orderId", full, "x:o-1", codes.OK, ""},
		{"custom JSON name", "tenant", full, "x:acme", codes.OK, ""},
		{"proto name of a custom JSON name", "tenant_name", full, "x:acme", codes.OK, ""},
		{"JSON names nested", "order.customer.accountId", full, `x:acc\:9`, codes.OK, ""},
		{"other message type, same path", "order_id", &testpb.KeyedRequest{OrderId: "k-1"}, "x:k-1", codes.OK, ""},

		{"missing string", "order_id", &testpb.PayRequest{}, "", codes.InvalidArgument, `field "order_id" is missing or empty`},
		{"missing message on the way", "order.id", &testpb.PayRequest{OrderId: "o"}, "", codes.InvalidArgument, `field "order.id" is missing`},
		{"zero int without presence", "account_number", &testpb.PayRequest{}, "", codes.InvalidArgument, "missing"},
		{"unset optional", "priority", &testpb.PayRequest{}, "", codes.InvalidArgument, "missing"},
		{"zero enum", "region", &testpb.PayRequest{}, "", codes.InvalidArgument, "missing"},
		{"enum number without a name", "region", &testpb.PayRequest{Region: 7}, "", codes.InvalidArgument, "no value numbered 7"},

		{"unknown field", "order.nope", full, "", codes.Internal, `lockkit.grpclock.test.v1.Order has no field "nope"`},
		{"unknown top-level field", "order_idd", full, "", codes.Internal, `has no field "order_idd"`},
		{"unknown even when value missing", "nope", &testpb.PayRequest{}, "", codes.Internal, "no field"},
		{"wrong type double", "amount", full, "", codes.Internal, "double field"},
		{"wrong type bytes", "blob", full, "", codes.Internal, "bytes field"},
		{"wrong type bool", "urgent", full, "", codes.Internal, "bool field"},
		{"wrong type repeated", "tags", full, "", codes.Internal, "repeated"},
		{"wrong type message leaf", "order", full, "", codes.Internal, "message field"},
		{"through a scalar", "order_id.x", full, "", codes.Internal, "not a singular message"},
		{"not a proto message", "order_id", struct{}{}, "", codes.Internal, "not a proto message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureGRPCLog(t)
			icp := grpclock.UnaryServerInterceptor(c, grpclock.Key(grpclock.Const("x"), grpclock.Field(tc.path)), grpclock.Wait(5*time.Second))
			var got string
			_, err := icp(testkit.Context(t, 10*time.Second), tc.msg, &grpc.UnaryServerInfo{FullMethod: testpb.Test_Pay_FullMethodName},
				func(ctx context.Context, _ any) (any, error) {
					l, _ := core.LeaseFromContext(ctx)
					got = l.Key()
					return nil, nil
				})
			st, _ := status.FromError(err)
			if st.Code() != tc.code {
				t.Fatalf("code %v (%v), want %v", st.Code(), err, tc.code)
			}
			if tc.code == codes.OK {
				if got != tc.key {
					t.Fatalf("key %q, want %q", got, tc.key)
				}
				return
			}
			if got != "" {
				t.Fatal("the handler ran")
			}
			// The caller's mistake is named to the caller; the server's only
			// in the server's log (grpclog), never in the answer.
			if tc.code == codes.Internal {
				if strings.Contains(st.Message(), tc.msg2) || logs.Count(tc.msg2) == 0 {
					t.Fatalf("message %q says %q, or the log does not (%d lines)", st.Message(), tc.msg2, logs.Count())
				}
				return
			}
			if !strings.Contains(st.Message(), tc.msg2) {
				t.Fatalf("message %q does not say %q", st.Message(), tc.msg2)
			}
		})
	}
}

// Func parts: an error wrapping core.ErrKeyConfig is the server's, any other
// the caller's.
func TestFuncPart(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{errors.New("bad header"), codes.InvalidArgument},
		{fmt.Errorf("%w: no tenant table", core.ErrKeyConfig), codes.Internal},
	} {
		icp := grpclock.UnaryServerInterceptor(c, grpclock.Key(grpclock.Func("tenant", func(*grpclock.Call) (string, error) { return "", tc.err })))
		_, err := icp(testkit.Context(t, 5*time.Second), &testpb.PayRequest{}, &grpc.UnaryServerInfo{FullMethod: "/x/Y"},
			func(context.Context, any) (any, error) { return nil, errors.New("handler ran") })
		// The caller's error is told to the caller, the server's only logged.
		if st, _ := status.FromError(err); st.Code() != tc.code || strings.Contains(st.Message(), strings.TrimPrefix(tc.err.Error(), "lockkit: ")) != (tc.code != codes.Internal) {
			t.Fatalf("Func error %v: got %v, want %v", tc.err, err, tc.code)
		}
	}
}
