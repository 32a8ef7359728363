// Command fiber is lockkit's quick start on fiber v3 (fasthttp): every
// request for order <id> runs under the lock order:<id>, on this process
// and on every other one using the same Redis. A payment waits (up to
// 10 s) for the one before it; a shipment does not wait and answers 409
// while the order is busy.
//
//	go -C examples run ./quickstart/fiber                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/fiber
//	curl -X POST localhost:8080/orders/42/pay & curl -X POST localhost:8080/orders/42/ship
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gofiber/fiber/v3"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fiberlock"
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
	app := newApp()
	routes(app, locks, pause)
	log.Printf("listening on http://%s", lis.Addr())
	if err := serve(ctx, lis, app); err != nil {
		log.Fatal(err)
	}
}

// routes locks both routes on the order they change. The middleware is
// given per route: fiber runs app.Use's handlers before it knows the route,
// so the lock would not see the :id there.
func routes(app *fiber.App, locks *core.Client, work func(context.Context)) {
	order := fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")) // order:<id>
	app.Post("/orders/:id/pay", fiberlock.New(locks, order, fiberlock.Wait(10*time.Second)), func(c fiber.Ctx) error {
		lease, _ := fiberlock.Lease(c)
		work(c.Context()) // ends early if the lease is lost
		return c.SendString(fmt.Sprintf("paid order %s, fencing token %d\n", c.Params("id"), lease.Token()))
	})
	app.Post("/orders/:id/ship", fiberlock.New(locks, order, fiberlock.NoWait()), func(c fiber.Ctx) error { // 409 while held
		return c.SendString("shipped order " + c.Params("id") + "\n")
	})
}

// newApp returns the fiber app with timeouts that bound how long a slow
// client can keep a connection (docs/deployment.md). fasthttp reads a
// request whole before its handler runs, so a slow client never holds a
// lock; ReadTimeout bounds that read, header and body.
func newApp() *fiber.App {
	return fiber.New(fiber.Config{ReadTimeout: 10 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute})
}

// serve runs app on lis until ctx ends. At the end, running handlers
// finish first.
func serve(ctx context.Context, lis net.Listener, app *fiber.App) error {
	served := make(chan error, 1)
	go func() { served <- app.Listener(lis, fiber.ListenConfig{DisableStartupMessage: true}) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	err := app.ShutdownWithTimeout(10 * time.Second)
	_ = lis.Close() // ends a Listener that had not begun serving when Shutdown ran
	return errors.Join(err, <-served)
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
