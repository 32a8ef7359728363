// Package ordersecho is the orders service on echo v5, with echo5lock in
// front of the routes of ordershttp.Routes. examples/echo serves it, and so
// does the demo's echo replica. It is on v5 because echo v4 only gets bug
// fixes until 2026-12-31 (security fixes until 2027-12-31); the library
// keeps echolock for v4 services.
package ordersecho

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echo5lock"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
)

// Config is what NewRouter needs: the Config of every HTTP front end.
type Config = ordershttp.Config

// NewRouter returns the orders API on echo v5. It returns a plain
// http.Handler because serving it is all its callers do: the example and
// the demo's replica. It panics, as echo5lock.NewWithConfig does, when
// cfg.Client is nil and cfg.NoLock is false.
//
// The router decodes path values (UnescapePathParamValues): echo v5 would
// otherwise hand a handler "%34%32" for /orders/%34%32/pay, while
// echo5lock decodes the id once for the key, and the handler would write
// another order than the one it locked.
func NewRouter(cfg Config) http.Handler {
	e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{UnescapePathParamValues: true})})
	if cfg.Log != nil {
		e.Logger = slog.New(slog.NewTextHandler(cfg.Log, nil))
		e.Use(middleware.RequestLogger())
	}
	e.Use(middleware.Recover())
	if cfg.Telemetry.On() {
		e.Use(nameSpan)
	}

	book := cfg.Book
	tenant := func(c *echo.Context) string { return c.Request().Header.Get(ordershttp.TenantHeader) }
	handlers := map[ordershttp.Op]echo.HandlerFunc{
		ordershttp.OpGet:    func(c *echo.Context) error { return c.JSON(http.StatusOK, book.Get(c.Param("id"))) },
		ordershttp.OpPay:    withAmount(book.Pay),
		ordershttp.OpRefund: withAmount(book.Refund),
		ordershttp.OpShip: func(c *echo.Context) error {
			o, err := book.Ship(c.Request().Context(), c.Param("id"), token(c))
			return reply(c, o, err)
		},
		ordershttp.OpTransfer: func(c *echo.Context) error {
			cents, err := orders.ParseAmount(c.QueryParam("amount"))
			if err != nil {
				return reply(c, nil, err)
			}
			ctx, from, to := c.Request().Context(), c.Param("id"), c.Param("to")
			a, b, err := book.Transfer(ctx, from, to, ordershttp.TokenOf(ctx, "order", from), ordershttp.TokenOf(ctx, "order", to), cents)
			return reply(c, map[string]orders.Order{"from": a, "to": b}, err)
		},
		ordershttp.OpExport: func(c *echo.Context) error {
			x, err := book.Export(c.Request().Context(), tenant(c), token(c))
			return reply(c, x, err)
		},
		ordershttp.OpSettings: func(c *echo.Context) error {
			st, err := book.Settings(c.Request().Context(), tenant(c))
			return reply(c, st, err)
		},
		ordershttp.OpSetSettings: func(c *echo.Context) error {
			st, err := book.SetSettings(c.Request().Context(), tenant(c), c.QueryParam("plan"), token(c))
			return reply(c, st, err)
		},
	}
	for _, rt := range ordershttp.Routes {
		var mw []echo.MiddlewareFunc // in the order they run: idempotency, the lock
		if cfg.Idempotent(rt) {
			mw = append(mw, echo5lock.Idempotent(cfg.Client, echo5lock.IdempotencyScope(rt.Idempotency.Scope.Spec())))
		}
		if rt.Lock != nil && !cfg.NoLock {
			mw = append(mw, lock(cfg, *rt.Lock))
		}
		e.Add(rt.Method, rt.Path, handlers[rt.Op], mw...)
	}
	if t := cfg.Telemetry; t.On() {
		// No contrib instrumentation exists for echo v5: otelhttp makes the
		// request's server span around the router, nameSpan names it for
		// the route once echo has routed the request (echo also sets the
		// request's Pattern to the route, which otelhttp names the span
		// with when the handler returns).
		return otelhttp.NewHandler(e, "http.server", otelhttp.WithTracerProvider(t.TracerProvider),
			otelhttp.WithMeterProvider(t.MeterProvider), otelhttp.WithPropagators(t.Propagator),
			otelhttp.WithSpanNameFormatter(spanName))
	}
	return e
}

// spanName is "POST /orders/:id/pay" once routed, "POST" before.
func spanName(_ string, r *http.Request) string {
	if r.Pattern != "" {
		return r.Method + " " + r.Pattern
	}
	return r.Method
}

// nameSpan names the request's span for its route, "POST /orders/:id/pay",
// and sets http.route (what otelgin does for gin). echo v5 runs e.Use
// middleware after routing, so c.Path() is the route.
func nameSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if route := c.Path(); route != "" {
			span := trace.SpanFromContext(c.Request().Context())
			span.SetName(c.Request().Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		return next(c)
	}
}

// lock is echo5lock in front of a route, as l describes it.
func lock(cfg Config, l ordershttp.Lock) echo.MiddlewareFunc {
	c := echo5lock.Config{Client: cfg.Client, NoWait: l.NoWait}
	if !l.NoWait {
		c.Wait = cfg.Wait
	}
	if len(l.Keys) == 1 {
		c.KeyParts = l.Keys[0].Spec()
	} else {
		for _, k := range l.Keys {
			c.Keys = append(c.Keys, k.Spec())
		}
	}
	switch l.Kind {
	case core.KindSemaphore:
		c.Limit = l.Limit
	case core.KindRead:
		c.ReadWrite = "read"
	case core.KindWrite:
		c.ReadWrite = "write"
	}
	if l.Token {
		c.TokenHeader = ordershttp.TokenHeader
	}
	return echo5lock.NewWithConfig(c)
}

// withAmount is the handler of a write that takes ?amount= (Pay, Refund).
func withAmount(write func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) echo.HandlerFunc {
	return func(c *echo.Context) error {
		cents, err := orders.ParseAmount(c.QueryParam("amount"))
		if err != nil {
			return reply(c, nil, err)
		}
		// c.Request().Context() ends if the client leaves or the lock is lost.
		ctx := orders.WithPayment(c.Request().Context(), c.Request().Header.Get(ordershttp.IdempotencyHeader))
		o, err := write(ctx, c.Param("id"), token(c), cents)
		return reply(c, o, err)
	}
}

// token is the fencing token of the lock the request holds (0 unlocked,
// ordershttp.LockToken): the book refuses a write with a token older than the order's last.
func token(c *echo.Context) int64 { return ordershttp.LockToken(c.Request().Context()) }

// reply answers v, or err as {"message": ...} with the status the book's
// error maps to (echo's DefaultHTTPErrorHandler writes it).
func reply(c *echo.Context, v any, err error) error {
	if err != nil {
		return echo.NewHTTPError(orders.HTTPStatus(err), err.Error()).Wrap(err)
	}
	return c.JSON(http.StatusOK, v)
}
