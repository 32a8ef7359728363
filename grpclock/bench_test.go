package grpclock_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
)

// The cost of the lock on an uncontended unary call over loopback: one
// acquire and one release round trip to a local redis-server, plus the
// lease bookkeeping, against the same call without the interceptor.
func BenchmarkUnary(b *testing.B) {
	srv := redistest.Start(b)
	for _, bc := range []struct {
		name string
		opts []grpc.ServerOption
	}{
		{"no lock", nil},
		{"lock", []grpc.ServerOption{unary(newClient(b, srv))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cl := serve(b, &service{}, bc.opts...)
			ctx := context.Background()
			req := &testpb.KeyedRequest{OrderId: "bench"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.PayKeyed(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
