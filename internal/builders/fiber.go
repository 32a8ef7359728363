package builders

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	fibercors "github.com/gofiber/fiber/v3/middleware/cors"
	fiberrecover "github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Fiber serves routes with fiber v3 (recover in front) and fiberlock, on
// fiber's own listener (fasthttp): no request goes through net/http.
var Fiber = FiberWith("fiber", fiber.Config{})

// FiberWith is Fiber on an app made with cfg (UnescapePath, ...).
func FiberWith(name string, cfg fiber.Config) conformance.Adapter {
	traits := conformance.Traits{ClientGoneUnseen: true, Buffered: true, PathPlusIsSpace: cfg.UnescapePath}
	return conformance.Adapter{Name: name, Traits: traits,
		Listen: func(t testing.TB, client *core.Client, routes ...conformance.Route) conformance.Server {
			return listenFiber(t, cfg, client, routes...)
		},
		Idempotent: func(client *core.Client, x conformance.Idempotency) error {
			_, err := fiberIdempotent(client, x)
			return err
		}}
}

var fiberOptions = optionSet[fiberlock.Option, fiberlock.Part]{
	key: fiberlock.Key, keyFromRoute: fiberlock.KeyFromRoute, wait: fiberlock.Wait, ttl: fiberlock.TTL, maxHold: fiberlock.MaxHold,
	noWait: fiberlock.NoWait, failOpen: fiberlock.FailOpen, tokenHeader: fiberlock.TokenHeader, limit: fiberlock.Limit,
	byMethod: fiberlock.ReadWrite, readSide: fiberlock.ReadSide, writeSide: fiberlock.WriteSide, acquireOptions: fiberlock.AcquireOptions,
	parts: map[string]func(string) fiberlock.Part{"const": fiberlock.Const, "param": fiberlock.Param, "header": fiberlock.Header, "query": fiberlock.Query, "cookie": fiberlock.Cookie},
	releaseError: func(f func(error)) fiberlock.Option {
		return fiberlock.OnReleaseError(func(_ fiber.Ctx, err error) { f(err) })
	},
	nilResponders: func() []fiberlock.Option {
		return customThenNil(fiberlock.Responder(func(c fiber.Ctx, _ error) error { return c.Status(http.StatusTeapot).SendString("custom") }),
			fiberlock.OnContended, fiberlock.OnLimited, fiberlock.OnUnavailable, fiberlock.OnBadKey, fiberlock.OnMisconfigured, fiberlock.OnClientGone)
	},
}

var fiberIdem = idemSet[fiberlock.IdempotencyOption]{
	header: fiberlock.IdempotencyHeader, required: fiberlock.IdempotencyRequired, storeEvery: fiberlock.IdempotencyStoreEveryAnswer,
	failOpen: fiberlock.IdempotencyFailOpen, methods: fiberlock.IdempotencyMethods, replayHeaders: fiberlock.IdempotencyReplayHeaders,
	scope:   scopeParts(fiberOptions.parts, fiberlock.IdempotencyScope),
	maxBody: fiberlock.IdempotencyMaxBody, maxAnswer: fiberlock.IdempotencyMaxAnswer, retention: fiberlock.IdempotencyRetention,
	wait: fiberlock.IdempotencyWait, ttl: fiberlock.IdempotencyTTL, maxHold: fiberlock.IdempotencyMaxHold,
}

func fiberIdempotent(client *core.Client, x conformance.Idempotency) (fiber.Handler, error) {
	return idempotent(fiberIdem, x, func(opts ...fiberlock.IdempotencyOption) fiber.Handler { return fiberlock.Idempotent(client, opts...) })
}

func listenFiber(t testing.TB, cfg fiber.Config, client *core.Client, routes ...conformance.Route) conformance.Server {
	cfg.ReadBufferSize = 32 << 10 // the suite sends 10 KB headers; fasthttp refuses past 4 KB by default
	app := fiber.New(cfg)
	app.Use(fiberrecover.New()) // the panic scenario panics on purpose
	for _, rt := range routes {
		// fiber runs a group's Use before it knows the route: the lock
		// goes on each route, under the group's prefix.
		handlers := []any{fiberDeadline(rt)}
		if rt.Idempotency != nil {
			once, err := fiberIdempotent(client, *rt.Idempotency)
			if err != nil {
				t.Fatalf("route %s: %v", rt.Path, err)
			}
			handlers = append(handlers, once)
		}
		var lock fiber.Handler
		if rt.Locked() {
			lock = fiberlock.New(client, fiberOptions.options(t, rt)...)
		}
		cors := fibercors.New(fibercors.Config{AllowOrigins: []string{conformance.CORSOrigin}, AllowMethods: corsMethods})
		switch {
		case lock == nil:
		case rt.CORS == conformance.CORSBefore:
			handlers = append(handlers, cors, lock)
		case rt.CORS == conformance.CORSAfter:
			handlers = append(handlers, lock, cors)
		default:
			handlers = append(handlers, lock)
		}
		handlers = append(handlers, fiberHandler(t, rt.Handler))
		app.Add([]string{rt.Method}, rt.Group+rt.Path, handlers[0], handlers[1:]...)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}()
	t.Cleanup(func() {
		_ = app.Shutdown()
		<-served
	})
	return conformance.Server{URL: "http://" + ln.Addr().String(), Shutdown: app.ShutdownWithContext}
}

// fiberDeadline puts rt's Deadline on the request's context, in front of
// the lock (conformance.Adapter.Listen).
func fiberDeadline(rt conformance.Route) fiber.Handler {
	return func(c fiber.Ctx) error {
		if rt.Deadline > 0 {
			ctx, cancel := context.WithTimeout(c.Context(), rt.Deadline)
			defer cancel()
			c.SetContext(ctx)
		}
		return c.Next()
	}
}

// fiberHandler runs h, the suite's framework-free handler, on a net/http
// view of fiber's request (its context the handler's, c.Context()) and
// answer (buffered by fasthttp, as every fiber answer is).
func fiberHandler(t testing.TB, h conformance.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		r, err := adaptor.ConvertRequest(c, true)
		if err != nil {
			t.Errorf("converting fiber's request: %v", err)
			return err
		}
		l, ok := fiberlock.Lease(c)
		h(&fiberWriter{c: c, hdr: http.Header{}}, r.WithContext(c.Context()), l, ok)
		return nil
	}
}

// fiberWriter is an http.ResponseWriter writing fiber's answer.
type fiberWriter struct {
	c     fiber.Ctx
	hdr   http.Header
	wrote bool
}

func (w *fiberWriter) Header() http.Header { return w.hdr }

func (w *fiberWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	for k, vs := range w.hdr {
		for _, v := range vs {
			w.c.Response().Header.Add(k, v)
		}
	}
	w.c.Status(code)
}

func (w *fiberWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.c.Write(p)
}
