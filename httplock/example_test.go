package httplock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/locktest"
)

// Routes of a ServeMux locked on the resource they change, order:<id>:
// pay and refund of one order exclude each other. The handler reads the
// lease for its fencing token.
func ExampleNew() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client() // a service's: core.New(redisClient)

	lockOrder := httplock.New(locks,
		httplock.Key(httplock.Const("order"), httplock.Param("id")),
		httplock.Wait(5*time.Second))
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := httplock.Lease(r)
		// Write with lease.Token(); r.Context() ends if the lease is lost.
		fmt.Fprintf(w, "paid under %s", lease.Key())
	})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", lockOrder(pay))

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
	fmt.Println(w.Code, w.Body.String())
	// Output: 200 paid under order:42
}

// The default answer to a request that found the lock held, and a custom
// one in its place (OnContended). Retry-After is set before the Responder
// runs.
func ExampleOnContended() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	key := httplock.Key(httplock.Const("order"), httplock.Param("id"))
	ship := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", httplock.New(srv.Client(), key, httplock.NoWait())(ship))
	mux.Handle("POST /v2/orders/{id}/ship", httplock.New(srv.Client(), key, httplock.NoWait(),
		httplock.OnContended(func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "order busy, retry", http.StatusConflict)
		}))(ship))

	ctx := context.Background()
	other, _ := srv.HoldByAnother(ctx, "order:42") // another request holds order:42
	defer other.Release(ctx)

	for _, target := range []string{"/orders/42/ship", "/v2/orders/42/ship"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, target, nil))
		fmt.Println(w.Code, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 409 application/problem+json 1
	// 409 text/plain; charset=utf-8 1
}
