package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkGinMiddleware: the cost ginlock adds to a gin route, in process
// (httptest recorder, no network between client and server): the route
// alone, with ginlock on a real redis-server, and with ginlock on miniredis.
func BenchmarkGinMiddleware(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	handler := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	route := func(mw ...gin.HandlerFunc) *gin.Engine {
		r := gin.New()
		r.POST("/orders/:id/pay", append(mw, handler)...)
		return r
	}
	withLock := func(b *testing.B, rdb *redis.Client) *gin.Engine {
		c, err := core.New(rdb)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return route(ginlock.New(c, ginlock.Key(ginlock.Const("order"), ginlock.Param("id")), ginlock.Wait(5*time.Second)))
	}
	run := func(b *testing.B, r *gin.Engine) {
		req := httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil).WithContext(context.Background())
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != http.StatusNoContent {
				b.Fatalf("status %d", w.Code)
			}
		}
	}
	b.Run("no-lock", func(b *testing.B) { run(b, route()) })
	b.Run("ginlock-redis", func(b *testing.B) {
		srv := redistest.Start(b)
		run(b, withLock(b, srv.NewClient()))
	})
	b.Run("ginlock-miniredis", func(b *testing.B) {
		mr := miniredis.RunT(b)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
		b.Cleanup(func() { _ = rdb.Close() })
		run(b, withLock(b, rdb))
	})
}
