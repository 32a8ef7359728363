package grpclock_test

import (
	"context"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
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
