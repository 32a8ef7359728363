package ginlock_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Limit(0) is the key's mutex, the lock of a route without Limit (409 while
// it is held); Limit(1) is a semaphore of one permit, another lock (429
// while that is held): see testkit.LimitZeroIsTheMutex.
func TestLimitZeroIsTheMutex(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	r := gin.New()
	paths := map[string]string{testkit.LimitZero: "/zero/", testkit.NoLimit: "/none/", testkit.LimitOne: "/one/"}
	for route, kind := range map[string][]ginlock.Option{testkit.LimitZero: {ginlock.Limit(0)}, testkit.NoLimit: nil, testkit.LimitOne: {ginlock.Limit(1)}} {
		r.POST(paths[route]+":t", ginlock.New(client, append(kind, ginlock.Key(ginlock.Const("export"), ginlock.Param("t")), ginlock.NoWait())...),
			func(c *gin.Context) { c.Status(http.StatusNoContent) })
	}
	testkit.LimitZeroIsTheMutex(t, testkit.Context(t, 30*time.Second), client, "export:t1", func(route string) core.Outcome {
		return testkit.OutcomeOfStatus(serve(r, http.MethodPost, paths[route]+"t1").Code)
	})
}
