package httplock_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Limit(0) is the key's mutex, the lock of a pattern without Limit (409
// while it is held); Limit(1) is a semaphore of one permit, another lock
// (429 while that is held): see testkit.LimitZeroIsTheMutex.
func TestLimitZeroIsTheMutex(t *testing.T) {
	srv := redistest.Start(t)
	client := testkit.Client(t, srv.NewClient())
	mux := http.NewServeMux()
	noContent := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	paths := map[string]string{testkit.LimitZero: "/zero/", testkit.NoLimit: "/none/", testkit.LimitOne: "/one/"}
	for route, kind := range map[string][]httplock.Option{testkit.LimitZero: {httplock.Limit(0)}, testkit.NoLimit: nil, testkit.LimitOne: {httplock.Limit(1)}} {
		mux.Handle("POST "+paths[route]+"{t}", httplock.New(client, append(kind, httplock.Key(httplock.Const("export"), httplock.Param("t")), httplock.NoWait())...)(noContent))
	}
	testkit.LimitZeroIsTheMutex(t, testkit.Context(t, 30*time.Second), client, "export:t1", func(route string) core.Outcome {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, paths[route]+"t1", nil))
		return testkit.OutcomeOfStatus(w.Code)
	})
}
