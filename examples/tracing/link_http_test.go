package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
)

// serveHTTP serves a replica through routes (ginRoutes, httpRoutes),
// calling its handler in process: POST /orders/42/pay.
func serveHTTP(routes func(*core.Client, http.Handler) http.Handler) serveReplica {
	return func(_ *testing.T, locks *core.Client, g *gate) payer {
		h := routes(locks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.pass(r.Context())
			w.WriteHeader(http.StatusNoContent)
		}))
		return func(ctx context.Context) error {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders/42/pay", nil))
			if w.Code != http.StatusNoContent {
				return fmt.Errorf("POST /orders/42/pay answered %d", w.Code)
			}
			return nil
		}
	}
}

// ginPay is ginRoutes with an http.Handler for the payment.
func ginPay(locks *core.Client, pay http.Handler) http.Handler {
	return ginRoutes(locks, func(c *gin.Context) { pay.ServeHTTP(c.Writer, c.Request) })
}
