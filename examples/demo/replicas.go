package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordersecho"
	"github.com/lockkit/lockkit/examples/internal/ordersfiber"
	"github.com/lockkit/lockkit/examples/internal/ordersgin"
	"github.com/lockkit/lockkit/examples/internal/ordersgrpc"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/lockview"
)

// replica is one server of the orders service. Like a replica in its own
// process it has its own go-redis client and lock Client on the shared
// Redis; what the replicas share is the order book (the database) and the
// locks' keys.
type replica struct {
	name, proto string // "gin", "http"
	addr        string
	rdb         redis.UniversalClient
	lock        *core.Client
	stats       *lockStats
	view        *lockview.View              // the live lock view of this replica's lock client
	stop        func(context.Context) error // stops serving, waiting for requests in flight
}

// Replica names, in report order.
const (
	replicaGin   = "gin"
	replicaEcho  = "echo"
	replicaFiber = "fiber"
	replicaGRPC  = "grpc"
)

var replicaNames = []string{replicaGin, replicaEcho, replicaFiber, replicaGRPC}

// startReplicas starts the gin, echo, fiber and gRPC replicas on loopback
// ports: the routers of examples/gin and examples/echo (ordersgin,
// ordersecho on echo v5), the same routes on fiber v3 (ordersfiber, on
// fasthttp; the routes are listed in ordershttp) and the server of
// examples/grpc (ordersgrpc, with its streams), each on the witness's view
// of the one order book.
// Each has its own telemetry (forReplica): its spans its own
// service.instance.id, its lock Client otellock besides its lockStats.
func startReplicas(cfg config, r *embedded.Redis, w *witness, tel *otelsetup.Telemetry) (_ []*replica, err error) {
	var reps []*replica
	defer func() {
		if err != nil {
			stopReplicas(reps)
		}
	}()
	for _, name := range replicaNames {
		rep := &replica{name: name, proto: "http", rdb: r.NewClient(), stats: newLockStats()}
		rep.stop = func(context.Context) error { return nil }
		reps = append(reps, rep)
		rt := forReplica(tel, name)
		// The report's counts, the lock view's and otellock's spans and
		// metrics all come from the same events.
		if rep.view, err = lockview.New(lockview.WithKeys(lockview.KeyRaw)); err != nil {
			return nil, err
		}
		obs := []core.Observer{rep.stats, rep.view.Observer()}
		if rt.lock != nil {
			obs = append(obs, rt.lock)
		}
		rep.lock, err = core.New(rep.rdb, core.WithObserver(core.Observers(obs...)), core.WithOwner("demo-"+name))
		if err != nil {
			return nil, err
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		rep.addr = lis.Addr().String()
		book := orders.Traced(w.book(name), rt.server.TracerProvider) // orders.write under lock.hold
		switch name {
		case replicaGin:
			rep.stop = serve.Start(lis, ordersgin.NewRouter(ordersgin.Config{Client: rep.lock, Book: book, Wait: cfg.wait, NoLock: cfg.noLock, NoIdempotency: cfg.noIdem, Telemetry: rt.server})).Stop
		case replicaEcho:
			rep.stop = serve.Start(lis, ordersecho.NewRouter(ordersecho.Config{Client: rep.lock, Book: book, Wait: cfg.wait, NoLock: cfg.noLock, NoIdempotency: cfg.noIdem, Telemetry: rt.server})).Stop
		case replicaFiber:
			app := ordersfiber.NewRouter(ordersfiber.Config{Client: rep.lock, Book: book, Wait: cfg.wait, NoLock: cfg.noLock, NoIdempotency: cfg.noIdem, Telemetry: rt.server})
			rep.stop = serveUntilStopped(func(ctx context.Context) error { return ordersfiber.Serve(ctx, app, lis) })
		case replicaGRPC:
			rep.proto = "grpc"
			s := ordersgrpc.NewServer(ordersgrpc.Config{Client: rep.lock, Book: book, Wait: cfg.wait, NoLock: cfg.noLock, NoIdempotency: cfg.noIdem, Telemetry: rt.server})
			rep.stop = serveUntilStopped(func(ctx context.Context) error { return ordersgrpc.Serve(ctx, s, lis) })
		}
	}
	return reps, nil
}

// serveUntilStopped runs serve in a goroutine and returns what stops it:
// serve's context ends, and its error is returned once it has (serve
// waits for the requests in flight itself, within its own bound).
func serveUntilStopped(serve func(context.Context) error) func(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	return func(context.Context) error { cancel(); return <-done }
}

// stopReplicas stops serving (requests in flight finish, their locks are
// released), then closes each lock Client and go-redis client.
func stopReplicas(reps []*replica) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, r := range reps {
		if err := r.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: stop: %w", r.name, err))
		}
	}
	for _, r := range reps {
		if r.lock != nil {
			if err := r.lock.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: close lock client: %w", r.name, err))
			}
		}
		if err := r.rdb.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: close redis client: %w", r.name, err))
		}
	}
	return errors.Join(errs...)
}
