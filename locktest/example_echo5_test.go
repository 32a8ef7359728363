package locktest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echo5lock"
	"github.com/lockkit/lockkit/locktest"
)

// How to test an echo (v5) handler behind echo5lock with locktest: the
// three conditions a locked handler must answer, with no Redis installed.

// echoPayServer is the code under test: POST /orders/:id/pay, locked on
// order:<id>, writing the payment fenced with the lease's token. It answers
// 409 itself when the lock was lost while it wrote; the middleware then
// reports the loss to onReleaseError once the handler returned.
func echoPayServer(t *testing.T, locks *core.Client, pay payments, onReleaseError func(error)) *echo.Echo {
	e := echo.New()
	lockOrder, err := echo5lock.Config{
		Client:              locks,
		KeyParts:            "const:order,param:id",
		NoWait:              true,
		ReleaseErrorHandler: func(_ *echo.Context, err error) { onReleaseError(err) },
	}.ToMiddleware()
	if err != nil {
		t.Fatal(err)
	}
	e.POST("/orders/:id/pay", func(c *echo.Context) error {
		lease, _ := echo5lock.Lease(c)
		err := pay(c.Request().Context(), c.Param("id"), lease.Token())
		switch {
		case errors.Is(context.Cause(c.Request().Context()), core.ErrLost):
			return echo.NewHTTPError(http.StatusConflict, "the order's lock was lost; retry")
		case err != nil:
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}, lockOrder)
	return e
}

func postEcho(e http.Handler, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, target, nil))
	return w
}

func TestEcho5Handler(t *testing.T) {
	paid := func(context.Context, string, int64) error { return nil }

	t.Run("held by another", func(t *testing.T) {
		srv := locktest.New(t)
		e := echoPayServer(t, srv.Client(), paid, noReleaseError(t))
		other, err := srv.HoldByAnother(t.Context(), "order:42")
		if err != nil {
			t.Fatal(err)
		}
		w := postEcho(e, "/orders/42/pay")
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q; want 409 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
		if err := other.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if w := postEcho(e, "/orders/42/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("after the release: status %d, want 204", w.Code)
		}
	})

	t.Run("redis unavailable", func(t *testing.T) {
		srv := locktest.New(t)
		e := echoPayServer(t, srv.Client(), paid, noReleaseError(t))
		srv.SetUnavailable(true)
		w := postEcho(e, "/orders/42/pay")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
		srv.SetUnavailable(false)
		if w := postEcho(e, "/orders/42/pay"); w.Code != http.StatusNoContent {
			t.Fatalf("Redis back: status %d, want 204", w.Code)
		}
	})

	t.Run("lease lost mid-handler", func(t *testing.T) {
		srv := locktest.New(t)
		var cause, released error
		e := echoPayServer(t, srv.Client(), func(ctx context.Context, order string, _ int64) error {
			// The lease is lost while the payment is written.
			if err := srv.LoseLease(ctx, "order:"+order); err != nil {
				t.Error(err)
			}
			cause = context.Cause(ctx)
			return ctx.Err()
		}, func(err error) { released = err })
		w := postEcho(e, "/orders/42/pay")
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
