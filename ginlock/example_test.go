package ginlock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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

// The other kinds of lock are options of the same middleware, with the same
// names in every adapter: Limit(n) a semaphore of n per key (429 past the
// wait), ReadWrite() a read/write lock whose readers are GET and HEAD, and
// Key given more than once several keys, all or nothing.
func ExampleLimit() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	ok := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	// At most 2 exports of a tenant at once.
	r.POST("/tenant/export", ginlock.New(locks,
		ginlock.Key(ginlock.Const("export"), ginlock.Header("X-Tenant")), ginlock.Limit(2), ginlock.NoWait()), ok)
	// GETs of a document share, other methods exclude.
	r.Match([]string{http.MethodGet, http.MethodPut}, "/docs/:id", ginlock.New(locks,
		ginlock.Key(ginlock.Const("doc"), ginlock.Param("id")), ginlock.ReadWrite()), ok)
	// A transfer locks both orders, in one order whatever the direction.
	r.POST("/orders/:id/transfer/:to", ginlock.New(locks,
		ginlock.Key(ginlock.Const("order"), ginlock.Param("id")),
		ginlock.Key(ginlock.Const("order"), ginlock.Param("to"))), ok)

	ctx := context.Background()
	for range 2 { // two exports of acme run
		p, _ := locks.Semaphore("export:acme", 2).Acquire(ctx)
		defer p.Release(ctx)
	}
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/tenant/export", nil),
		httptest.NewRequest(http.MethodGet, "/docs/7", nil),
		httptest.NewRequest(http.MethodPost, "/orders/1/transfer/2", nil),
	} {
		req.Header.Set("X-Tenant", "acme")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(req.Method, req.URL.Path, w.Code)
	}
	// Output:
	// POST /tenant/export 429
	// GET /docs/7 204
	// POST /orders/1/transfer/2 204
}

// A payment route that runs once per Idempotency-Key: the client's retry
// (it timed out and sent the same POST again) gets the stored answer,
// marked Idempotent-Replayed, and the handler does not run again.
// Idempotent goes before the route's lock, so a replay never takes it.
func ExampleIdempotent() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := srv.Client()

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	payments := 0
	r.POST("/orders/:id/pay",
		ginlock.Idempotent(client, ginlock.IdempotencyRequired()),
		ginlock.New(client, ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))),
		func(c *gin.Context) {
			payments++
			claim, _ := ginlock.Claim(c) // fence the payment's writes with claim.Token()
			_ = claim
			c.JSON(http.StatusCreated, gin.H{"payment": payments})
		})

	for range 2 { // the first try and its retry
		req := httptest.NewRequest(http.MethodPost, "/orders/42/pay", strings.NewReader(`{"amount":10}`))
		req.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body.String(), "replayed:", w.Header().Get("Idempotent-Replayed") == "true")
	}
	fmt.Println("payments:", payments)
	// Output:
	// 201 {"payment":1} replayed: false
	// 201 {"payment":1} replayed: true
	// payments: 1
}
