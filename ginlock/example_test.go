package ginlock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/locktest"
)

// A route locked on the resource it changes, order:<id>: requests for one
// order run one at a time, on every replica and on every route keyed the
// same way. The handler reads the lease for its fencing token.
func ExampleNew() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	lockOrder := ginlock.New(locks,
		ginlock.Key(ginlock.Const("order"), ginlock.Param("id")),
		ginlock.Wait(5*time.Second))
	r.POST("/orders/:id/pay", lockOrder, func(c *gin.Context) {
		lease, _ := ginlock.Lease(c)
		// Write with lease.Token(); c.Request.Context() ends if the lease is lost.
		c.String(http.StatusOK, "paid under %s", lease.Key())
	})

	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
	fmt.Println(w.Code, w.Body.String())
	// Output: 200 paid under order:42
}

// A custom answer when another request holds the lock, in place of the
// default 409 application/problem+json. The middleware has already set
// Retry-After, and aborts the chain after the Responder.
func ExampleOnContended() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	lockOrder := ginlock.New(srv.Client(),
		ginlock.Key(ginlock.Const("order"), ginlock.Param("id")),
		ginlock.NoWait(),
		ginlock.OnContended(func(c *gin.Context, err error) {
			c.JSON(http.StatusConflict, gin.H{"error": "order busy, retry"})
		}))
	r.POST("/orders/:id/ship", lockOrder, func(c *gin.Context) { c.Status(http.StatusNoContent) })

	ctx := context.Background()
	other, _ := srv.HoldByAnother(ctx, "order:42") // another request holds order:42
	defer other.Release(ctx)

	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/ship", nil))
	fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Body.String())
	// Output: 409 1 {"error":"order busy, retry"}
}
