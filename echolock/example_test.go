package echolock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"

	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/locktest"
)

// A route locked on the resource it changes: the key spec
// "const:order,param:id" gives order:<id>, the key gin and gRPC build from
// the same parts. The handler reads the lease for its fencing token.
func ExampleNew() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	e := echo.New()
	e.POST("/orders/:id/pay", func(c echo.Context) error {
		lease, _ := echolock.Lease(c)
		// Write with lease.Token(); c.Request().Context() ends if the lease is lost.
		return c.String(http.StatusOK, "paid under "+lease.Key())
	}, echolock.New(locks, "const:order,param:id"))

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
	fmt.Println(w.Code, w.Body.String())
	// Output: 200 paid under order:42
}

// NewWithConfig for the other settings: here no waiting, and a custom
// answer when another request holds the lock (DenyHandler), in place of
// the default 409 application/problem+json.
func ExampleNewWithConfig() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	e := echo.New()
	lockOrder := echolock.NewWithConfig(echolock.Config{
		Client:   srv.Client(),
		KeyParts: "const:order,param:id",
		NoWait:   true,
		DenyHandler: func(c echo.Context, key string, err error) error {
			return c.JSON(http.StatusConflict, map[string]string{"error": "order busy, retry"})
		},
	})
	e.POST("/orders/:id/ship", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, lockOrder)

	ctx := context.Background()
	other, _ := srv.HoldByAnother(ctx, "order:42") // another request holds order:42
	defer other.Release(ctx)

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/ship", nil))
	fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Body.String())
	// Output: 409 1 {"error":"order busy, retry"}
}
