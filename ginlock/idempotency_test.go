package ginlock_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/redistest"
)

// gin's renderers set the status before their Content-Type (c.JSON,
// c.String, c.Data), and c.Status writes no body: the first run and its
// replay carry the Content-Type gin gives without idempotency, and a bare
// status is stored and replayed as it is.
func TestIdempotentKeepsGinsRendering(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	r := gin.New()
	runs := 0
	r.POST("/json/:id", ginlock.Idempotent(client), func(c *gin.Context) { runs++; c.JSON(http.StatusCreated, gin.H{"run": runs}) })
	r.POST("/text/:id", ginlock.Idempotent(client), func(c *gin.Context) { runs++; c.String(http.StatusAccepted, "run %d", runs) })
	r.POST("/bare/:id", ginlock.Idempotent(client), func(c *gin.Context) { runs++; c.Status(http.StatusNoContent) })
	for _, tc := range []struct {
		path, contentType string
		status            int
	}{
		{"/json/1", "application/json; charset=utf-8", http.StatusCreated},
		{"/text/1", "text/plain; charset=utf-8", http.StatusAccepted},
		{"/bare/1", "", http.StatusNoContent},
	} {
		var first string
		for try, replayed := range []string{"", "true"} {
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader("{}"))
			req.Header.Set("Idempotency-Key", "k"+tc.path)
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != tc.status || w.Header().Get("Content-Type") != tc.contentType || w.Header().Get("Idempotent-Replayed") != replayed {
				t.Errorf("%s try %d: %d Content-Type %q replayed %q, want %d %q %q", tc.path, try, w.Code, w.Header().Get("Content-Type"), w.Header().Get("Idempotent-Replayed"), tc.status, tc.contentType, replayed)
			}
			if try == 0 {
				first = w.Body.String()
			} else if w.Body.String() != first {
				t.Errorf("%s: replay %q, first %q", tc.path, w.Body.String(), first)
			}
		}
	}
	if runs != 3 {
		t.Errorf("%d runs, want 3", runs)
	}
}
