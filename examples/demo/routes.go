package main

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/ginlock"
)

// The HTTP replicas serve the orders API of examples/gin and examples/echo
// (the routes that change an order):
//
//	POST /orders/:id/pay?amount=N     lock order:<id>, wait up to the budget, 409 past it
//	POST /orders/:id/refund?amount=N  lock order:<id>, wait
//	POST /orders/:id/ship             lock order:<id>, no wait: 409 at once when busy
//	GET  /orders/:id                  no lock
//
// A 409 from the lock carries Retry-After; a 409 from the order's rules
// (refund above the balance, already shipped) does not.

// ginRouter is the gin replica. locked false leaves the lock out (-nolock).
func ginRouter(client *core.Client, book orders.Book, wait time.Duration, locked bool) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	key := ginlock.Key(ginlock.Const("order"), ginlock.Param("id")) // "order:<id>"
	lockWait := ginlock.New(client, key, ginlock.Wait(wait), ginlock.TokenHeader("Lock-Token"))
	lockNoWait := ginlock.New(client, key, ginlock.NoWait(), ginlock.TokenHeader("Lock-Token"))
	if !locked {
		lockWait, lockNoWait = func(c *gin.Context) { c.Next() }, func(c *gin.Context) { c.Next() }
	}
	token := func(c *gin.Context) int64 {
		if l, ok := ginlock.Lease(c); ok {
			return l.Token()
		}
		return 0
	}
	write := func(do func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) gin.HandlerFunc {
		return func(c *gin.Context) {
			cents, err := orders.ParseAmount(c.Query("amount"))
			var o orders.Order
			if err == nil {
				// The request's context ends if the client leaves or the lock is lost.
				o, err = do(c.Request.Context(), c.Param("id"), token(c), cents)
			}
			if err != nil {
				c.JSON(orders.HTTPStatus(err), gin.H{"error": err.Error()})
				return
			}
			c.JSON(http.StatusOK, o)
		}
	}
	r.GET("/orders/:id", func(c *gin.Context) { c.JSON(http.StatusOK, book.Get(c.Param("id"))) })
	r.POST("/orders/:id/pay", lockWait, write(book.Pay))
	r.POST("/orders/:id/refund", lockWait, write(book.Refund))
	r.POST("/orders/:id/ship", lockNoWait, write(ship(book)))
	return r
}

// echoRouter is the echo replica, the same routes on echolock.
func echoRouter(client *core.Client, book orders.Book, wait time.Duration, locked bool) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover())
	lockWait := echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:order,param:id", Wait: wait, TokenHeader: "Lock-Token"})
	lockNoWait := echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:order,param:id", NoWait: true, TokenHeader: "Lock-Token"})
	if !locked {
		lockWait, lockNoWait = func(next echo.HandlerFunc) echo.HandlerFunc { return next }, func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	token := func(c echo.Context) int64 {
		if l, ok := echolock.Lease(c); ok {
			return l.Token()
		}
		return 0
	}
	write := func(do func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) echo.HandlerFunc {
		return func(c echo.Context) error {
			cents, err := orders.ParseAmount(c.QueryParam("amount"))
			var o orders.Order
			if err == nil {
				o, err = do(c.Request().Context(), c.Param("id"), token(c), cents)
			}
			if err != nil {
				return echo.NewHTTPError(orders.HTTPStatus(err), err.Error()).SetInternal(err)
			}
			return c.JSON(http.StatusOK, o)
		}
	}
	e.GET("/orders/:id", func(c echo.Context) error { return c.JSON(http.StatusOK, book.Get(c.Param("id"))) })
	e.POST("/orders/:id/pay", write(book.Pay), lockWait)
	e.POST("/orders/:id/refund", write(book.Refund), lockWait)
	e.POST("/orders/:id/ship", write(ship(book)), lockNoWait)
	return e
}

// ship fits Ship to the shape of Pay and Refund (it has no amount).
func ship(book orders.Book) func(ctx context.Context, id string, token, _ int64) (orders.Order, error) {
	return func(ctx context.Context, id string, token, _ int64) (orders.Order, error) {
		return book.Ship(ctx, id, token)
	}
}
