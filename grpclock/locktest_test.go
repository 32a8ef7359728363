package grpclock_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/locktest"
)

// How to test a gRPC handler behind grpclock with locktest: the three
// conditions a locked handler must answer, with no Redis installed.

// lockedOrders is the code under test: PayKeyed runs under the lock its
// request names (KeyedRequest.LockKey: order:<order_id>) and writes the
// payment fenced with the lease's token. When the lease is lost while it
// writes, the write fails with the context's error and grpclock answers
// codes.Aborted.
type lockedOrders struct {
	testpb.UnimplementedTestServer
	pay func(ctx context.Context, order string, token int64) error
}

func (s *lockedOrders) PayKeyed(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
	lease, _ := core.LeaseFromContext(ctx)
	if err := s.pay(ctx, r.GetOrderId(), lease.Token()); err != nil {
		return nil, err
	}
	return &testpb.PayResponse{Token: lease.Token()}, nil
}

// dialLocked serves svc behind grpclock's unary interceptor on an
// in-memory listener and returns a client; both stop at cleanup.
func dialLocked(t *testing.T, locks *core.Client, svc testpb.TestServer) testpb.TestClient {
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(locks, grpclock.NoWait())))
	testpb.RegisterTestServer(s, svc)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///orders",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-served
	})
	return testpb.NewTestClient(conn)
}

func TestLocktestGRPCHandler(t *testing.T) {
	paid := func(context.Context, string, int64) error { return nil }
	order42 := &testpb.KeyedRequest{OrderId: "42"}

	t.Run("held by another", func(t *testing.T) {
		srv := locktest.New(t)
		client := dialLocked(t, srv.Client(), &lockedOrders{pay: paid})
		other, err := srv.HoldByAnother(t.Context(), "order:42")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.PayKeyed(t.Context(), order42); status.Code(err) != codes.Aborted {
			t.Fatalf("PayKeyed = %v, want Aborted", err)
		}
		if err := other.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := client.PayKeyed(t.Context(), order42); err != nil {
			t.Fatalf("after the release: %v", err)
		}
	})

	t.Run("redis unavailable", func(t *testing.T) {
		srv := locktest.New(t)
		client := dialLocked(t, srv.Client(), &lockedOrders{pay: paid})
		srv.SetUnavailable(true)
		if _, err := client.PayKeyed(t.Context(), order42); status.Code(err) != codes.Unavailable {
			t.Fatalf("PayKeyed = %v, want Unavailable", err)
		}
		srv.SetUnavailable(false)
		if _, err := client.PayKeyed(t.Context(), order42); err != nil {
			t.Fatalf("Redis back: %v", err)
		}
	})

	t.Run("lease lost mid-handler", func(t *testing.T) {
		srv := locktest.New(t)
		causes := make(chan error, 1)
		client := dialLocked(t, srv.Client(), &lockedOrders{pay: func(ctx context.Context, order string, _ int64) error {
			// The lease is lost while the payment is written.
			if err := srv.LoseLease(ctx, "order:"+order); err != nil {
				t.Error(err)
			}
			causes <- context.Cause(ctx)
			return ctx.Err()
		}})
		_, err := client.PayKeyed(t.Context(), order42)
		if cause := <-causes; !errors.Is(cause, core.ErrLost) {
			t.Fatalf("the handler's context ended with %v, want core.ErrLost", cause)
		}
		if status.Code(err) != codes.Aborted {
			t.Fatalf("PayKeyed = %v, want Aborted", err)
		}
	})
}
