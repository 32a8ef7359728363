package grpclock_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/redis/go-redis/v9"
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

func exampleClient() *core.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
	client, err := core.New(rdb) // no I/O yet
	if err != nil {
		panic(err)
	}
	return client
}

// Unary calls lock the key their message names with LockKey() (here
// order:<order_id>); the lock sits after auth and before recovery.
func ExampleUnaryServerInterceptor() {
	client := exampleClient()
	_ = grpc.NewServer(grpc.ChainUnaryInterceptor(
		// auth.UnaryServerInterceptor(authFn),
		grpclock.UnaryServerInterceptor(client, grpclock.Wait(5*time.Second)),
		recovery.UnaryServerInterceptor(),
	))
}

// A key from message fields, by path, when the message has no LockKey().
func ExampleField() {
	client := exampleClient()
	_ = grpclock.UnaryServerInterceptor(client,
		grpclock.Key(grpclock.Const("account"), grpclock.Field("order.customer.account_id")))
}

// A server stream holding account:<x-account-id> for its whole life, and a
// client stream keyed by its first message's tenant field.
func ExampleStreamServerInterceptor() {
	client := exampleClient()
	_ = grpc.NewServer(grpc.ChainStreamInterceptor(
		grpclock.StreamServerInterceptor(client, grpclock.Key(grpclock.Const("account"), grpclock.Metadata("x-account-id"))),
	))
	_ = grpclock.StreamServerInterceptor(client, grpclock.FromFirstMessage(),
		grpclock.Key(grpclock.Const("tenant"), grpclock.Field("tenant")))
}

// Lock only the methods that change an order, with go-grpc-middleware's
// selector; the others run without a lock (and need no key).
func Example_selector() {
	client := exampleClient()
	locked := map[string]bool{testpb.Test_Pay_FullMethodName: true, testpb.Test_PayKeyed_FullMethodName: true}
	changes := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool { return locked[c.FullMethod()] })
	_ = grpc.NewServer(grpc.ChainUnaryInterceptor(
		selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(client), changes),
	))
}

// A call through the interceptor: PayKeyed runs holding the lock its
// request names with LockKey() (order:<order_id>), and its handler reads
// the lease from its context for the fencing token.
func ExampleUnaryServerInterceptor_handler() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	s := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpclock.UnaryServerInterceptor(locks, grpclock.Wait(5*time.Second)),
	))
	testpb.RegisterTestServer(s, payments{})
	client, stop := serveExample(s)
	defer stop()

	_, err = client.PayKeyed(context.Background(), &testpb.KeyedRequest{OrderId: "42"})
	fmt.Println("err:", err)
	// Output:
	// PayKeyed under order:42
	// err: <nil>
}

// payments is a service whose handler runs under the lock.
type payments struct{ testpb.UnimplementedTestServer }

func (payments) PayKeyed(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
	lease, _ := core.LeaseFromContext(ctx)
	// Write with lease.Token(); ctx ends, with cause core.ErrLost, if the lease is lost.
	fmt.Println("PayKeyed under", lease.Key())
	return &testpb.PayResponse{Token: lease.Token()}, nil
}

// A custom answer when another call holds the lock; every other outcome
// keeps the default answer.
func ExampleOnContended() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	busy := func(ctx context.Context, r *grpclock.Rejection) error {
		return status.Errorf(codes.Aborted, "%s is busy, retry", r.Key)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpclock.UnaryServerInterceptor(srv.Client(), grpclock.NoWait(), grpclock.OnContended(busy)),
	))
	testpb.RegisterTestServer(s, payments{})
	client, stop := serveExample(s)
	defer stop()

	ctx := context.Background()
	other, _ := srv.HoldByAnother(ctx, "order:42") // another call holds order:42
	defer other.Release(ctx)

	_, err = client.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "42"})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output: Aborted order:42 is busy, retry
}

// serveExample serves s on an in-memory listener and returns a client of
// it, and the function that stops both.
func serveExample(s *grpc.Server) (testpb.TestClient, func()) {
	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return testpb.NewTestClient(conn), func() {
		_ = conn.Close()
		s.Stop()
		<-served
	}
}
