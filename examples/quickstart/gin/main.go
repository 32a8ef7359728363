// Command gin is lockkit's quick start on gin: every request for order
// <id> runs under the lock order:<id>,
// on this process and on every other one using the same Redis. A payment
// waits (up to 10 s) for the one before it; a shipment does not wait and
// answers 409 while the order is busy.
//
//	go -C examples run ./quickstart/gin                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/gin
//	curl -X POST localhost:8080/orders/42/pay & curl -X POST localhost:8080/orders/42/ship
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

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
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
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	order := ginlock.Key(ginlock.Const("order"), ginlock.Param("id")) // order:<id>
	r.POST("/orders/:id/pay", ginlock.New(locks, order, ginlock.Wait(10*time.Second)), func(c *gin.Context) {
		lease, _ := ginlock.Lease(c)
		work(c.Request.Context()) // ends early if the lease is lost
		c.String(http.StatusOK, "paid order %s, fencing token %d\n", c.Param("id"), lease.Token())
	})
	r.POST("/orders/:id/ship", ginlock.New(locks, order, ginlock.NoWait()), func(c *gin.Context) { // 409 while held
		c.String(http.StatusOK, "shipped order %s\n", c.Param("id"))
	})
	return r
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
