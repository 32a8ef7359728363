package fiberlock_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/locktest"
)

// A route locked on the resource it changes, order:<id>: requests for one
// order run one at a time, on every replica and on every route keyed the
// same way, whatever framework serves it. The handler reads the lease for
// its fencing token.
func ExampleNew() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	app := fiber.New()
	lockOrder := fiberlock.New(locks,
		fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")),
		fiberlock.Wait(5*time.Second))
	app.Post("/orders/:id/pay", lockOrder, func(c fiber.Ctx) error {
		lease, _ := fiberlock.Lease(c)
		// Write with lease.Token(); c.Context() ends if the lease is lost.
		return c.SendString("paid under " + lease.Key())
	})

	res, err := app.Test(httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(body))
	// Output: 200 paid under order:42
}

// A custom answer when another request holds the lock, in place of the
// default 409 application/problem+json; Retry-After is already set.
func ExampleOnContended() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	if _, err := srv.HoldByAnother(context.Background(), "order:7"); err != nil {
		panic(err)
	}

	app := fiber.New()
	app.Post("/orders/:id/ship", fiberlock.New(srv.Client(),
		fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")),
		fiberlock.NoWait(),
		fiberlock.OnContended(func(c fiber.Ctx, _ error) error {
			return c.Status(http.StatusConflict).JSON(fiber.Map{"error": "order busy"})
		})), func(c fiber.Ctx) error { return c.SendString("shipped") })

	res, err := app.Test(httptest.NewRequest(http.MethodPost, "/orders/7/ship", nil))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, res.Header.Get("Retry-After"), string(body))
	// Output: 409 1 {"error":"order busy"}
}
