// Command echo is lockkit's quick start on echo v5 (echolock for echo v4
// reads the same): every request for order <id> runs under the lock order:<id>,
// on this process and on every other one using the same Redis. A payment
// waits (up to 10 s) for the one before it; a shipment does not wait and
// answers 409 while the order is busy.
//
//	go -C examples run ./quickstart/echo                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/echo
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
	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echo5lock"
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

// routes locks both routes on the order they change. The router decodes
// path values, so the handler reads the id the lock was taken on.
func routes(locks *core.Client, work func(context.Context)) http.Handler {
	e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{UnescapePathParamValues: true})})
	e.POST("/orders/:id/pay", func(c *echo.Context) error {
		lease, _ := echo5lock.Lease(c)
		work(c.Request().Context()) // ends early if the lease is lost
		return c.String(http.StatusOK, fmt.Sprintf("paid order %s, fencing token %d\n", c.Param("id"), lease.Token()))
	}, echo5lock.New(locks, "const:order,param:id")) // order:<id>; waits up to 10 s (Config.Wait)
	e.POST("/orders/:id/ship", func(c *echo.Context) error {
		return c.String(http.StatusOK, "shipped order "+c.Param("id")+"\n")
	}, echo5lock.NewWithConfig(echo5lock.Config{Client: locks, KeyParts: "const:order,param:id", NoWait: true})) // 409 while held
	return e
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
