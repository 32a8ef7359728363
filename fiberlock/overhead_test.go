package fiberlock_test

import (
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/internal/adapttest"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// What fiberlock adds to a core cycle, per request (adds-allocs/op), the
// request served by fiber's handler in process, as fasthttp would.
func BenchmarkOverhead(b *testing.B) {
	c := testkit.Client(b, redistest.Start(b).NewClient())
	h := func(c fiber.Ctx) error { return c.SendStatus(http.StatusNoContent) }
	plain, locked := fiber.New(), fiber.New()
	plain.Post("/orders/:id/pay", h)
	locked.Post("/orders/:id/pay", fiberlock.New(c, fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id"))), h)
	serve := func(app *fiber.App) func() {
		handler := app.Handler()
		var ctx fasthttp.RequestCtx
		return func() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.SetMethod(http.MethodPost)
			ctx.Request.SetRequestURI("/orders/42/pay")
			handler(&ctx)
			if code := ctx.Response.StatusCode(); code != http.StatusNoContent {
				b.Fatalf("status %d", code)
			}
		}
	}
	adapttest.Overhead(b, serve(locked), serve(plain), adapttest.CoreCycle(b, c, "order", "42"))
}
