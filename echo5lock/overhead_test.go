package echo5lock_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/echo5lock"
	"github.com/lockkit/lockkit/internal/adapttest"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// What echo5lock adds to a core cycle, per request (adds-allocs/op).
func BenchmarkOverhead(b *testing.B) {
	c := testkit.Client(b, redistest.Start(b).NewClient())
	h := func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }
	plain, locked := echo.New(), echo.New()
	plain.POST("/orders/:id/pay", h)
	locked.POST("/orders/:id/pay", h, echo5lock.New(c, "const:order,param:id"))
	req := httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil)
	serve := func(r http.Handler) func() {
		return func() {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != http.StatusNoContent {
				b.Fatalf("status %d", w.Code)
			}
		}
	}
	adapttest.Overhead(b, serve(locked), serve(plain), adapttest.CoreCycle(b, c, "order", "42"))
}
