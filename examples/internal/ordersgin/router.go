// Package ordersgin is the orders service on gin, with ginlock in front of
// the routes ordershttp lists. examples/gin serves it, and so does the
// demo's gin replica.
package ordersgin

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"

	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
	"github.com/lockkit/lockkit/ginlock"
)

// Config is what NewRouter needs: the Config of every HTTP front end.
type Config = ordershttp.Config

// NewRouter returns the orders API on gin. It returns a plain http.Handler
// because serving it is all its callers do: the example, the demo's
// replica and the benchmark. It panics, as ginlock.New does, when
// cfg.Client is nil and cfg.NoLock is false.
func NewRouter(cfg Config) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	if cfg.Log != nil {
		r.Use(gin.LoggerWithWriter(cfg.Log))
	}
	r.Use(gin.Recovery())
	if t := cfg.Telemetry; t.On() {
		// The request's span, named "POST /orders/:id/pay"; the lock's
		// spans nest under it.
		r.Use(otelgin.Middleware("orders", otelgin.WithTracerProvider(t.TracerProvider),
			otelgin.WithMeterProvider(t.MeterProvider), otelgin.WithPropagators(t.Propagator)))
	}

	lockOrder, shipOnce, lockBoth := gin.HandlerFunc(pass), gin.HandlerFunc(pass), gin.HandlerFunc(pass)
	limitExports, lockSettings := gin.HandlerFunc(pass), gin.HandlerFunc(pass)
	if !cfg.NoLock {
		orderKey := ginlock.Key(ginlock.Const("order"), ginlock.Param("id")) // "order:<id>" on every order route
		lockOrder = ginlock.New(cfg.Client, orderKey, ginlock.Wait(cfg.Wait), ginlock.TokenHeader(ordershttp.TokenHeader))
		// Shipping twice is the classic duplicate click: answer 409 at once
		// rather than queue behind the first.
		shipOnce = ginlock.New(cfg.Client, orderKey, ginlock.NoWait(), ginlock.TokenHeader(ordershttp.TokenHeader))
		// A transfer locks both orders, all or nothing, in one order
		// whatever its direction: no deadlock between opposite transfers.
		lockBoth = ginlock.New(cfg.Client, orderKey, ginlock.Key(ginlock.Const("order"), ginlock.Param("to")),
			ginlock.Wait(cfg.Wait), ginlock.TokenHeader(ordershttp.TokenHeader))
		tenant := []ginlock.Part{ginlock.Const("export"), ginlock.Header(ordershttp.TenantHeader)}
		limitExports = ginlock.New(cfg.Client, ginlock.Key(tenant...), ginlock.Limit(ordershttp.ExportLimit), ginlock.Wait(cfg.Wait))
		lockSettings = ginlock.New(cfg.Client, ginlock.Key(ginlock.Const("settings"), ginlock.Header(ordershttp.TenantHeader)),
			ginlock.ReadWrite(), ginlock.Wait(cfg.Wait))
	}

	book := cfg.Book
	r.GET("/orders/:id", func(c *gin.Context) { c.JSON(http.StatusOK, book.Get(c.Param("id"))) })
	r.POST("/orders/:id/pay", lockOrder, withAmount(book.Pay))
	r.POST("/orders/:id/refund", lockOrder, withAmount(book.Refund))
	r.POST("/orders/:id/ship", shipOnce, func(c *gin.Context) {
		o, err := book.Ship(c.Request.Context(), c.Param("id"), token(c))
		reply(c, o, err)
	})
	r.POST("/orders/:id/transfer/:to", lockBoth, func(c *gin.Context) {
		cents, err := orders.ParseAmount(c.Query("amount"))
		if err != nil {
			reply(c, nil, err)
			return
		}
		from, to := c.Param("id"), c.Param("to")
		a, b, err := book.Transfer(c.Request.Context(), from, to, ordershttp.TokenOf(c.Request.Context(), "order", from),
			ordershttp.TokenOf(c.Request.Context(), "order", to), cents)
		reply(c, gin.H{"from": a, "to": b}, err)
	})
	r.POST("/tenant/export", limitExports, func(c *gin.Context) {
		e, err := book.Export(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader), token(c))
		reply(c, e, err)
	})
	r.GET("/tenant/settings", lockSettings, func(c *gin.Context) {
		st, err := book.Settings(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader))
		reply(c, st, err)
	})
	r.PUT("/tenant/settings", lockSettings, func(c *gin.Context) {
		st, err := book.SetSettings(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader), c.Query("plan"), token(c))
		reply(c, st, err)
	})
	return r
}

func pass(c *gin.Context) { c.Next() }

// withAmount is the handler of a write that takes ?amount= (Pay, Refund).
func withAmount(write func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		cents, err := orders.ParseAmount(c.Query("amount"))
		if err != nil {
			reply(c, nil, err)
			return
		}
		// c.Request.Context() ends if the client leaves or the lock is lost.
		o, err := write(c.Request.Context(), c.Param("id"), token(c), cents)
		reply(c, o, err)
	}
}

// token is the fencing token of the lock the request holds (0 unlocked):
// the book refuses a write with a token older than the order's last.
func token(c *gin.Context) int64 {
	if l, ok := ginlock.Lease(c); ok {
		return l.Token()
	}
	return 0
}

func reply(c *gin.Context, v any, err error) {
	if err != nil {
		c.JSON(orders.HTTPStatus(err), gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, v)
}
