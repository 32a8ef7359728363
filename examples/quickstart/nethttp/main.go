// Command nethttp is lockkit's quick start on net/http (ServeMux; chi the
// same way): every request for order <id> runs under the lock order:<id>,
// on this process and on every other one using the same Redis. A payment
// waits (up to 10 s) for the one before it; a shipment does not wait and
// answers 409 while the order is busy.
//
//	go -C examples run ./quickstart/nethttp                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/nethttp
//	curl -X POST localhost:8080/orders/42/pay & curl -X POST localhost:8080/orders/42/ship
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
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

// routes locks both routes on the order they change.
func routes(locks *core.Client, work func(context.Context)) http.Handler {
	order := httplock.Key(httplock.Const("order"), httplock.Param("id")) // order:<id>
	pay := httplock.New(locks, order, httplock.Wait(10*time.Second))
	ship := httplock.New(locks, order, httplock.NoWait()) // 409 while held
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", pay(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := httplock.Lease(r)
		work(r.Context()) // ends early if the lease is lost
		fmt.Fprintf(w, "paid order %s, fencing token %d\n", r.PathValue("id"), lease.Token())
	})))
	mux.Handle("POST /orders/{id}/ship", ship(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "shipped order %s\n", r.PathValue("id"))
	})))
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
