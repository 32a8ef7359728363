package locktest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/locktest"
)

// How to test a gin handler behind ginlock with locktest: the three
// conditions a locked handler must answer, with no Redis installed.

// payments is the handler's dependency; each test fakes it.
type payments func(ctx context.Context, order string, token int64) error

// ginPayRouter is the code under test: POST /orders/:id/pay, locked on
// order:<id>, writing the payment fenced with the lease's token. It answers
// 409 itself when the lock was lost while it wrote; the middleware then
// reports the loss to onReleaseError once the handler returned.
func ginPayRouter(locks *core.Client, pay payments, onReleaseError func(error)) *gin.Engine {
	r := gin.New()
	lockOrder := ginlock.New(locks,
		ginlock.Key(ginlock.Const("order"), ginlock.Param("id")),
		ginlock.NoWait(),
		ginlock.OnReleaseError(func(_ *gin.Context, err error) { onReleaseError(err) }))
	r.POST("/orders/:id/pay", lockOrder, func(c *gin.Context) {
		lease, _ := ginlock.Lease(c)
		err := pay(c.Request.Context(), c.Param("id"), lease.Token())
		switch {
		case errors.Is(context.Cause(c.Request.Context()), core.ErrLost):
			c.String(http.StatusConflict, "the order's lock was lost; retry")
		case err != nil:
			c.Status(http.StatusInternalServerError)
		default:
			c.Status(http.StatusNoContent)
		}
	})
	return r
}

// noReleaseError fails the test on a release error: none is expected
// unless a lease was lost.
func noReleaseError(t *testing.T) func(error) {
	return func(err error) { t.Errorf("release error: %v", err) }
}

func postGin(r http.Handler, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, target, nil))
	return w
}

func TestGinHandler(t *testing.T) {
	gin.SetMode(gin.TestMode)
	paid := func(context.Context, string, int64) error { return nil }

	t.Run("free", func(t *testing.T) {
		srv := locktest.New(t)
		if w := postGin(ginPayRouter(srv.Client(), paid, noReleaseError(t)), "/orders/42/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("status %d, want 204", w.Code)
		}
	})

	t.Run("held by another", func(t *testing.T) {
		srv := locktest.New(t)
		r := ginPayRouter(srv.Client(), paid, noReleaseError(t))
		other, err := srv.HoldByAnother(t.Context(), "order:42")
		if err != nil {
			t.Fatal(err)
		}
		w := postGin(r, "/orders/42/pay")
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q; want 409 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
		if w := postGin(r, "/orders/43/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("another order: status %d, want 204", w.Code)
		}
		if err := other.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if w := postGin(r, "/orders/42/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("after the release: status %d, want 204", w.Code)
		}
	})

	t.Run("redis unavailable", func(t *testing.T) {
		srv := locktest.New(t)
		r := ginPayRouter(srv.Client(), paid, noReleaseError(t))
		srv.SetUnavailable(true)
		w := postGin(r, "/orders/42/pay")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
		srv.SetUnavailable(false)
		if w := postGin(r, "/orders/42/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("Redis back: status %d, want 204", w.Code)
		}
	})

	t.Run("lease lost mid-handler", func(t *testing.T) {
		srv := locktest.New(t)
		var cause, released error
		r := ginPayRouter(srv.Client(), func(ctx context.Context, order string, _ int64) error {
			// The lease is lost while the payment is written.
			if err := srv.LoseLease(ctx, "order:"+order); err != nil {
				t.Error(err)
			}
			cause = context.Cause(ctx)
			return ctx.Err()
		}, func(err error) { released = err })
		w := postGin(r, "/orders/42/pay")
		if !errors.Is(cause, core.ErrLost) {
			t.Fatalf("the handler's context ended with %v, want core.ErrLost", cause)
		}
		if w.Code != http.StatusConflict {
			t.Fatalf("status %d, want the handler's 409", w.Code)
		}
		if !errors.Is(released, core.ErrLost) {
			t.Fatalf("release error %v, want core.ErrLost", released)
		}
	})
}
