package grpclock_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/adapttest"
	"github.com/lockkit/lockkit/internal/redistest"
)

// What the unary interceptor adds to a core cycle, per call
// (adds-allocs/op), called in process: no transport in either measure.
func BenchmarkOverhead(b *testing.B) {
	c := newClient(b, redistest.Start(b))
	ic := grpclock.UnaryServerInterceptor(c, grpclock.Key(grpclock.Const("order"), grpclock.Field("order_id")))
	info := &grpc.UnaryServerInfo{FullMethod: "/lockkit.test.Test/PayKeyed"}
	req := &testpb.KeyedRequest{OrderId: "42"}
	h := func(ctx context.Context, _ any) (any, error) { return nil, nil }
	ctx := context.Background()
	call := func(f func() error) func() {
		return func() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
	}
	locked := call(func() error { _, err := ic(ctx, req, info, h); return err })
	plain := call(func() error { _, err := h(ctx, req); return err })
	adapttest.Overhead(b, locked, plain, adapttest.CoreCycle(b, c, "order", "42"))
}
