package httplock_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A key part naming a wildcard the pattern does not have answers 500 to
// every request, and says why once per pattern, through the logger.
func TestMisconfigurationIsLoggedOncePerPattern(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := core.New(rdb) // no I/O: the key fails before any acquire
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	logs := &testkit.Logs{}
	lock := httplock.New(c, httplock.Key(httplock.Const("acct"), httplock.Param("account")),
		httplock.Logger(slog.New(slog.NewTextHandler(logs, nil))))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/deposit", lock(ok))
	mux.Handle("POST /accounts/{id}/withdraw", lock(ok))
	for range 5 {
		for _, p := range []string{"/accounts/1/deposit", "/accounts/2/withdraw"} {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, p, nil))
			if w.Code != http.StatusInternalServerError {
				t.Fatalf("%s: %d, want 500", p, w.Code)
			}
		}
	}
	for _, pattern := range []string{"POST /accounts/{id}/deposit", "POST /accounts/{id}/withdraw"} {
		if n := logs.Count("misconfigured", pattern, `param \"account\"`); n != 1 {
			t.Errorf("%s logged %d times, want once: %d lines", pattern, n, logs.Count())
		}
	}
}
