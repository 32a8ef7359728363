package httplock_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/adapttest"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// What httplock adds to a core cycle on a ServeMux route, per request
// (adds-allocs/op).
func BenchmarkOverhead(b *testing.B) {
	c := testkit.Client(b, redistest.Start(b).NewClient())
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	plain, locked := http.NewServeMux(), http.NewServeMux()
	plain.Handle("POST /orders/{id}/pay", h)
	locked.Handle("POST /orders/{id}/pay", httplock.New(c, httplock.Key(httplock.Const("order"), httplock.Param("id")))(h))
	req := httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil)
	serve := func(r http.Handler) func() {
		return func() {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != http.StatusNoContent {
				b.Fatalf("status %d", w.Code)
			}
		}
	}
	adapttest.Overhead(b, serve(locked), serve(plain), adapttest.CoreCycle(b, c, "order", "42"))
}
