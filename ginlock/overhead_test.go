package ginlock_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/adapttest"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// What ginlock adds to a core cycle, per request (adds-allocs/op).
func BenchmarkOverhead(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	c := testkit.Client(b, redistest.Start(b).NewClient())
	h := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	plain, locked := gin.New(), gin.New()
	plain.POST("/orders/:id/pay", h)
	locked.POST("/orders/:id/pay", ginlock.New(c, ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))), h)
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
