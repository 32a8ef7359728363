// Command grpc is lockkit's quick start on gRPC: every call for order <id>
// runs under the lock order:<id>, on this process and on every other one
// using the same Redis: a second payment of an order waits (up to 10 s) for
// the one before it. The service is declared by hand, so that this file
// needs no generated code; with generated code, a request message's
// LockKey() method can name the key instead of the Key option.
//
//	go -C examples run ./quickstart/grpc                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/grpc
//
// main_test.go calls it with conn.Invoke; examples/grpc is an orders
// service with generated code and reflection, for grpcurl.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
)

func main() {
	locks, closeLocks, err := openLocks()
	if err != nil {
		log.Fatal(err)
	}
	defer closeLocks()
	lis, err := net.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// The work under the lock: here a pause; in a service, a write that
	// carries the lease's fencing token (package fence).
	pause := func(ctx context.Context) {
		sleep, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		<-sleep.Done()
	}
	log.Printf("serving orders.v1.Orders/Pay on %s", lis.Addr())
	if err := serve(ctx, lis, newServer(locks, pause)); err != nil {
		log.Fatal(err)
	}
}

// newServer locks every call on the order its request names, with
// keepalive settings that bound how long a client can keep a call, and so
// its lock (docs/deployment.md).
func newServer(locks *core.Client, work func(context.Context)) *grpc.Server {
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(locks,
			grpclock.Key(grpclock.Const("order"), grpclock.Field("value")), // order:<the request's value>
			grpclock.Wait(10*time.Second))),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute, MaxConnectionAge: 10 * time.Minute,
			MaxConnectionAgeGrace: time.Minute, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
	register(s, func(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.Int64Value, error) {
		lease, _ := core.LeaseFromContext(ctx)
		work(ctx) // ends early if the lease is lost
		return wrapperspb.Int64(lease.Token()), nil
	})
	return s
}

// register serves pay as orders.v1.Orders/Pay, declared by hand: the order
// id in, the fencing token out.
func register(s *grpc.Server, pay func(context.Context, *wrapperspb.StringValue) (*wrapperspb.Int64Value, error)) {
	s.RegisterService(&grpc.ServiceDesc{ServiceName: "orders.v1.Orders", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{{
		MethodName: "Pay",
		Handler: func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			req := new(wrapperspb.StringValue)
			if err := dec(req); err != nil {
				return nil, err
			}
			return in(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/orders.v1.Orders/Pay"},
				func(ctx context.Context, req any) (any, error) { return pay(ctx, req.(*wrapperspb.StringValue)) })
		},
	}}}, nil)
}

// serve runs s on lis until ctx ends; then running calls finish first.
func serve(ctx context.Context, lis net.Listener, s *grpc.Server) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	cut := time.AfterFunc(10*time.Second, s.Stop)
	defer cut.Stop()
	s.GracefulStop()
	return <-served
}

// openLocks makes the lock Client on REDIS_URL's Redis, or on an embedded
// one (miniredis) when it is unset, and returns what closes them.
func openLocks() (*core.Client, func(), error) {
	opt, closeRedis := &redis.Options{}, func() {}
	if url := os.Getenv("REDIS_URL"); url != "" {
		var err error
		if opt, err = redis.ParseURL(url); err != nil { // its text may hold a password: never printed
			return nil, nil, errors.New("REDIS_URL is not a redis:// or rediss:// URL")
		}
	} else {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, err
		}
		opt.Addr, closeRedis = mr.Addr(), mr.Close
	}
	opt.ContextTimeoutEnabled = true // core.New requires it: a ctx deadline then bounds Redis I/O
	rdb := redis.NewClient(opt)
	locks, err := core.New(rdb)
	if err != nil {
		return nil, nil, errors.Join(err, rdb.Close())
	}
	return locks, func() { _ = locks.Close(); _ = rdb.Close(); closeRedis() }, nil
}
