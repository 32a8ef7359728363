package ginlock_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A key part naming a parameter the route does not have answers 500 to
// every request, and says why once, through the logger (with gin.New()
// nothing else would): not once per request, and once per route.
func TestMisconfigurationIsLoggedOncePerRoute(t *testing.T) {
	logs := &testkit.Logs{}
	e := gin.New()
	lock := ginlock.New(offlineClient(t), ginlock.Key(ginlock.Const("acct"), ginlock.Param("account")),
		ginlock.Logger(slog.New(slog.NewTextHandler(logs, nil))))
	e.POST("/accounts/:id/deposit", lock, leaseKey)
	e.POST("/accounts/:id/withdraw", lock, leaseKey)
	for range 5 {
		for _, p := range []string{"/accounts/1/deposit", "/accounts/2/withdraw"} {
			if w := serve(e, http.MethodPost, p); w.Code != http.StatusInternalServerError {
				t.Fatalf("%s: %d, want 500", p, w.Code)
			}
		}
	}
	for _, route := range []string{"/accounts/:id/deposit", "/accounts/:id/withdraw"} {
		if n := logs.Count("misconfigured", route, `param \"account\"`); n != 1 {
			t.Errorf("%s logged %d times, want once: %d lines", route, n, logs.Count())
		}
	}
}
