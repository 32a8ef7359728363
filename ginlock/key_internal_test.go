package ginlock

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// Every routing setting of gin gives the key of the id decoded to its end,
// whether gin hands the parameter over decoded or not.
func TestParamsBySetting(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name    string
		set     func(*gin.Engine)
		target  string
		wantKey string
	}{
		{"default", func(*gin.Engine) {}, "/orders/%34%32/pay", "order:42"},
		{"raw path", func(e *gin.Engine) { e.UseRawPath, e.UnescapePathValues = true, false }, "/orders/%34%32/pay", "order:42"},
		{"raw path, unescaped", func(e *gin.Engine) { e.UseRawPath = true }, "/orders/%2525/pay", "order:%"},
		{"escaped path", func(e *gin.Engine) { e.UseEscapedPath, e.UnescapePathValues = true, false }, "/orders/a%20b/pay", "order:a b"},
		{"escaped path, unescaped", func(e *gin.Engine) { e.UseEscapedPath = true }, "/orders/a%20b/pay", "order:a b"},
		{"escaped path, a percent", func(e *gin.Engine) { e.UseEscapedPath, e.UnescapePathValues = true, false }, "/orders/%2525/pay", "order:%"},
		{"default, a percent", func(*gin.Engine) {}, "/orders/%2525/pay", "order:%"},
	} {
		e := gin.New()
		tc.set(e)
		var key string
		e.POST("/orders/:id/pay", func(c *gin.Context) { key, _ = join([]Part{Const("order"), Param("id")}).Build(c) })
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, tc.target, nil))
		if key != tc.wantKey {
			t.Errorf("%s: %s locked %q, want %q", tc.name, tc.target, key, tc.wantKey)
		}
	}
}
