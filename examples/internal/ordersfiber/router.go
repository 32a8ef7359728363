// Package ordersfiber is the orders service on fiber v3, with fiberlock in
// front of the routes of ordershttp.Routes: the demo's fiber replica. Its
// handlers read fiber's request as fasthttp holds it; nothing is converted
// to net/http.
package ordersfiber

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/logger"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/fiberlock"
)

// Config is what NewRouter needs: the Config of every HTTP front end.
type Config = ordershttp.Config

// NewRouter returns the orders API on fiber, with the examples' server
// timeouts (serve.Default). It panics, as fiberlock.New does, when
// cfg.Client is nil and cfg.NoLock is false.
//
// The lock, and the request's span when cfg.Telemetry is on, are in each
// route's handler list: fiber runs app.Use's handlers before it knows the
// route, and the lock's key and the span's name need it.
func NewRouter(cfg Config) *fiber.App {
	fc := serve.Default.FiberConfig()
	// The book keeps the ids and tenants it is given (as its map keys);
	// fiber's strings alias fasthttp's buffers, reused by the connection's
	// next request, unless the app is Immutable.
	fc.Immutable = true
	app := fiber.New(fc)
	if cfg.Log != nil {
		app.Use(logger.New(logger.Config{Stream: cfg.Log}))
	}
	app.Use(recover.New())
	var front []any // the first handlers of every route: the request's span
	if t := cfg.Telemetry; t.On() {
		front = append(front, traced(t))
	}

	book := cfg.Book
	tenant := func(c fiber.Ctx) string { return c.Get(ordershttp.TenantHeader) }
	handlers := map[ordershttp.Op]fiber.Handler{
		ordershttp.OpGet:    withID(func(c fiber.Ctx, id string) error { return c.JSON(book.Get(id)) }),
		ordershttp.OpPay:    withAmount(book.Pay),
		ordershttp.OpRefund: withAmount(book.Refund),
		ordershttp.OpShip: withID(func(c fiber.Ctx, id string) error {
			o, err := book.Ship(c.Context(), id, token(c))
			return reply(c, o, err)
		}),
		ordershttp.OpTransfer: withID(func(c fiber.Ctx, from string) error {
			to, err := param(c, "to")
			if err != nil {
				return reply(c, nil, err)
			}
			cents, err := orders.ParseAmount(c.Query("amount"))
			if err != nil {
				return reply(c, nil, err)
			}
			ctx := c.Context()
			a, b, err := book.Transfer(ctx, from, to, ordershttp.TokenOf(ctx, "order", from), ordershttp.TokenOf(ctx, "order", to), cents)
			return reply(c, fiber.Map{"from": a, "to": b}, err)
		}),
		ordershttp.OpExport: func(c fiber.Ctx) error {
			x, err := book.Export(c.Context(), tenant(c), token(c))
			return reply(c, x, err)
		},
		ordershttp.OpSettings: func(c fiber.Ctx) error {
			st, err := book.Settings(c.Context(), tenant(c))
			return reply(c, st, err)
		},
		ordershttp.OpSetSettings: func(c fiber.Ctx) error {
			st, err := book.SetSettings(c.Context(), tenant(c), c.Query("plan"), token(c))
			return reply(c, st, err)
		},
	}
	for _, rt := range ordershttp.Routes {
		chain := slices.Clone(front) // the route's handlers, in the order they run
		if cfg.Idempotent(rt) {
			chain = append(chain, fiberlock.Idempotent(cfg.Client, fiberlock.IdempotencyScope(parts(rt.Idempotency.Scope)...)))
		}
		if rt.Lock != nil && !cfg.NoLock {
			chain = append(chain, lock(cfg, *rt.Lock))
		}
		chain = append(chain, handlers[rt.Op])
		app.Add([]string{rt.Method}, rt.Path, chain[0], chain[1:]...)
	}
	return app
}

// lock is fiberlock in front of a route, as l describes it.
func lock(cfg Config, l ordershttp.Lock) fiber.Handler {
	var opts []fiberlock.Option
	for _, k := range l.Keys {
		opts = append(opts, fiberlock.Key(parts(k)...))
	}
	switch l.Kind {
	case core.KindSemaphore:
		opts = append(opts, fiberlock.Limit(l.Limit))
	case core.KindRead:
		opts = append(opts, fiberlock.ReadSide())
	case core.KindWrite:
		opts = append(opts, fiberlock.WriteSide())
	}
	if l.NoWait {
		opts = append(opts, fiberlock.NoWait())
	} else {
		opts = append(opts, fiberlock.Wait(cfg.Wait))
	}
	if l.Token {
		opts = append(opts, fiberlock.TokenHeader(ordershttp.TokenHeader))
	}
	return fiberlock.New(cfg.Client, opts...)
}

// parts are k's parts as fiberlock reads them.
func parts(k ordershttp.Key) []fiberlock.Part {
	ps := make([]fiberlock.Part, len(k))
	for i, p := range k {
		switch p.From {
		case ordershttp.Const:
			ps[i] = fiberlock.Const(p.Name)
		case ordershttp.Param:
			ps[i] = fiberlock.Param(p.Name)
		case ordershttp.Header:
			ps[i] = fiberlock.Header(p.Name)
		}
	}
	return ps
}

// param is the path parameter name decoded once, as gin and echo hand a
// handler its value: /orders/%34%32/pay pays order 42, the order
// fiberlock locked (fiber hands it over escaped). An escape that does not
// decode is a 400, as net/http answers such a path.
func param(c fiber.Ctx, name string) (string, error) {
	v, err := url.PathUnescape(c.Params(name))
	if err != nil {
		return "", fiber.NewError(http.StatusBadRequest, "the path's "+name+" is not valid percent-encoding")
	}
	return v, nil
}

// withID is a handler of the order the path's :id names.
func withID(h func(c fiber.Ctx, id string) error) fiber.Handler {
	return func(c fiber.Ctx) error {
		id, err := param(c, "id")
		if err != nil {
			return reply(c, nil, err)
		}
		return h(c, id)
	}
}

// withAmount is the handler of a write that takes ?amount= (Pay, Refund).
func withAmount(write func(ctx context.Context, id string, token, cents int64) (orders.Order, error)) fiber.Handler {
	return withID(func(c fiber.Ctx, id string) error {
		cents, err := orders.ParseAmount(c.Query("amount"))
		if err != nil {
			return reply(c, nil, err)
		}
		// c.Context() ends if the lock is lost (fasthttp does not end it
		// when the client leaves).
		o, err := write(orders.WithPayment(c.Context(), c.Get(ordershttp.IdempotencyHeader)), id, token(c), cents)
		return reply(c, o, err)
	})
}

// token is the fencing token of the lock the request holds (0 unlocked,
// ordershttp.LockToken): the book refuses a write with a token older than the order's last.
func token(c fiber.Ctx) int64 { return ordershttp.LockToken(c.Context()) }

// reply answers v, or err as {"error": ...} with the status the book's
// error maps to (or a fiber.Error's own).
func reply(c fiber.Ctx, v any, err error) error {
	if err != nil {
		status := orders.HTTPStatus(err)
		if fe, ok := errors.AsType[*fiber.Error](err); ok {
			status = fe.Code
		}
		return c.Status(status).JSON(fiber.Map{"error": err.Error()})
	}
	return c.JSON(v)
}

// Serve serves app on lis until ctx ends, then stops gracefully: requests
// in flight get up to 10s to finish.
func Serve(ctx context.Context, app *fiber.App, lis net.Listener) error {
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
