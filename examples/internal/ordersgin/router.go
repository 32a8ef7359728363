// Package ordersgin is the orders service on gin, with ginlock in front of
// the routes of ordershttp.Routes. examples/gin serves it, and so does the
// demo's gin replica.
package ordersgin

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"

	"github.com/lockkit/lockkit/core"
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

	book := cfg.Book
	handlers := map[ordershttp.Op]gin.HandlerFunc{
		ordershttp.OpGet:    func(c *gin.Context) { c.JSON(http.StatusOK, book.Get(c.Param("id"))) },
		ordershttp.OpPay:    withAmount(book.Pay),
		ordershttp.OpRefund: withAmount(book.Refund),
		ordershttp.OpShip: func(c *gin.Context) {
			o, err := book.Ship(c.Request.Context(), c.Param("id"), token(c))
			reply(c, o, err)
		},
		ordershttp.OpTransfer: func(c *gin.Context) {
			cents, err := orders.ParseAmount(c.Query("amount"))
			if err != nil {
				reply(c, nil, err)
				return
			}
			from, to := c.Param("id"), c.Param("to")
			a, b, err := book.Transfer(c.Request.Context(), from, to, ordershttp.TokenOf(c.Request.Context(), "order", from),
				ordershttp.TokenOf(c.Request.Context(), "order", to), cents)
			reply(c, gin.H{"from": a, "to": b}, err)
		},
		ordershttp.OpExport: func(c *gin.Context) {
			e, err := book.Export(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader), token(c))
			reply(c, e, err)
		},
		ordershttp.OpSettings: func(c *gin.Context) {
			st, err := book.Settings(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader))
			reply(c, st, err)
		},
		ordershttp.OpSetSettings: func(c *gin.Context) {
			st, err := book.SetSettings(c.Request.Context(), c.GetHeader(ordershttp.TenantHeader), c.Query("plan"), token(c))
			reply(c, st, err)
		},
	}
	for _, rt := range ordershttp.Routes {
		var chain []gin.HandlerFunc // in the order they run: idempotency, the lock, the handler
		if cfg.Idempotent(rt) {
			chain = append(chain, ginlock.Idempotent(cfg.Client, ginlock.IdempotencyScope(parts(rt.Idempotency.Scope)...)))
		}
		if rt.Lock != nil && !cfg.NoLock {
			chain = append(chain, lock(cfg, *rt.Lock))
		}
		chain = append(chain, handlers[rt.Op])
		r.Handle(rt.Method, rt.Path, chain...)
	}
	return r
}

// lock is ginlock in front of a route, as l describes it.
func lock(cfg Config, l ordershttp.Lock) gin.HandlerFunc {
	var opts []ginlock.Option
	for _, k := range l.Keys {
		opts = append(opts, ginlock.Key(parts(k)...))
	}
	switch l.Kind {
	case core.KindSemaphore:
		opts = append(opts, ginlock.Limit(l.Limit))
	case core.KindRead:
		opts = append(opts, ginlock.ReadSide())
	case core.KindWrite:
		opts = append(opts, ginlock.WriteSide())
	}
	if l.NoWait {
		opts = append(opts, ginlock.NoWait())
	} else {
		opts = append(opts, ginlock.Wait(cfg.Wait))
	}
	if l.Token {
		opts = append(opts, ginlock.TokenHeader(ordershttp.TokenHeader))
	}
	return ginlock.New(cfg.Client, opts...)
}

// parts are k's parts as ginlock reads them.
func parts(k ordershttp.Key) []ginlock.Part {
	ps := make([]ginlock.Part, len(k))
	for i, p := range k {
		switch p.From {
		case ordershttp.Const:
			ps[i] = ginlock.Const(p.Name)
		case ordershttp.Param:
			ps[i] = ginlock.Param(p.Name)
		case ordershttp.Header:
			ps[i] = ginlock.Header(p.Name)
		}
	}
	return ps
}

// withAmount is the handler of a write that takes ?amount= (Pay, Refund).
func withAmount(write func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		cents, err := orders.ParseAmount(c.Query("amount"))
		if err != nil {
			reply(c, nil, err)
			return
		}
		// c.Request.Context() ends if the client leaves or the lock is lost.
		ctx := orders.WithPayment(c.Request.Context(), c.GetHeader(ordershttp.IdempotencyHeader))
		o, err := write(ctx, c.Param("id"), token(c), cents)
		reply(c, o, err)
	}
}

// token is the fencing token of the lock the request holds (0 unlocked,
// ordershttp.LockToken): the book refuses a write with a token older than
// the order's last.
func token(c *gin.Context) int64 { return ordershttp.LockToken(c.Request.Context()) }

func reply(c *gin.Context, v any, err error) {
	if err != nil {
		c.JSON(orders.HTTPStatus(err), gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, v)
}
