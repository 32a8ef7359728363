package grpclock_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Limit(0) is the key's mutex, the lock of an interceptor without Limit
// (Aborted while it is held); Limit(1) is a semaphore of one permit,
// another lock (ResourceExhausted while that is held): see
// testkit.LimitZeroIsTheMutex.
func TestLimitZeroIsTheMutex(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := testkit.Context(t, 30*time.Second)
	servers := map[string]testpb.TestClient{}
	for route, kind := range map[string][]grpclock.Option{testkit.LimitZero: {grpclock.Limit(0)}, testkit.NoLimit: nil, testkit.LimitOne: {grpclock.Limit(1)}} {
		servers[route] = serve(t, &service{}, unary(client, append(kind, grpclock.Key(grpclock.Const("export"), grpclock.Field("tenant_name")), grpclock.NoWait())...))
	}
	testkit.LimitZeroIsTheMutex(t, ctx, client, "export:t1", func(route string) core.Outcome {
		_, err := servers[route].Pay(ctx, &testpb.PayRequest{TenantName: "t1"})
		switch status.Code(err) {
		case codes.OK:
			return core.OutcomeAcquired
		case codes.Aborted:
			return core.OutcomeContended
		case codes.ResourceExhausted:
			return core.OutcomeLimited
		}
		return 0
	})
}
