package echolock_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A key part naming a parameter the route does not have answers 500 to
// every request, and says why once per route, through echo's logger.
func TestMisconfigurationIsLoggedOncePerRoute(t *testing.T) {
	logs := &testkit.Logs{}
	e := echo.New()
	e.Logger.SetOutput(logs)
	lock := echolock.New(offlineClient(t), "const:acct,param:account")
	e.POST("/accounts/:id/deposit", leaseKey, lock)
	e.POST("/accounts/:id/withdraw", leaseKey, lock)
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
