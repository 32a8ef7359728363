// Command connect is lockkit's quick start on connect-go: every call for
// order <id> runs under the lock order:<id>, on this process and on every
// other one using the same Redis. A payment waits (up to 10 s) for the one
// before it; a shipment does not wait and is answered aborted (with a
// retry hint) while the order is busy. The procedures take and answer
// protobuf's wrapper types, so that this file needs no generated code.
//
//	go -C examples run ./quickstart/connect                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/connect
//	curl -H 'Content-Type: application/json' -d '"42"' localhost:8080/orders.v1.Orders/Pay &
//	curl -H 'Content-Type: application/json' -d '"42"' localhost:8080/orders.v1.Orders/Ship
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"connectrpc.com/connect"
	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/core"
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
	log.Printf("listening on http://%s", lis.Addr())
	if err := serve(ctx, lis, routes(locks, pause)); err != nil {
		log.Fatal(err)
	}
}

// routes locks both procedures on the order their request names.
func routes(locks *core.Client, work func(context.Context)) http.Handler {
	order := connectlock.Key(connectlock.Const("order"), connectlock.Field("value")) // order:<the request's value>
	pay := func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.Int64Value], error) {
		lease, _ := core.LeaseFromContext(ctx)
		work(ctx) // ends early if the lease is lost
		return connect.NewResponse(wrapperspb.Int64(lease.Token())), nil
	}
	ship := func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		return connect.NewResponse(wrapperspb.String("shipped order " + req.Msg.GetValue())), nil
	}
	mux := http.NewServeMux()
	mux.Handle("/orders.v1.Orders/Pay", connect.NewUnaryHandler("/orders.v1.Orders/Pay", pay,
		connect.WithInterceptors(connectlock.UnaryInterceptor(locks, order, connectlock.Wait(10*time.Second)))))
	mux.Handle("/orders.v1.Orders/Ship", connect.NewUnaryHandler("/orders.v1.Orders/Ship", ship,
		connect.WithInterceptors(connectlock.UnaryInterceptor(locks, order, connectlock.NoWait())))) // aborted while held
	return mux
}

// serve runs h on lis until ctx ends, with timeouts that bound how long a
// slow client can keep a handler running, and so its lock held
// (docs/deployment.md). At the end, running handlers finish first.
func serve(ctx context.Context, lis net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(stopCtx)
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
