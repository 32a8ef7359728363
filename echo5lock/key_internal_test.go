package echo5lock

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/guard"
)

// Every router setting of echo gives the key of the id decoded to its end,
// whether echo hands the value over decoded or not.
func TestParamsBySetting(t *testing.T) {
	key := guard.Join(guard.Const[*echo.Context]("order"), guard.Param[*echo.Context](reader{}, "id"))
	for _, unescape := range []bool{false, true} {
		for target, want := range map[string]string{"/orders/%34%32": "order:42", "/orders/%2525": "order:%", "/orders/a%2Fb": "order:a/b"} {
			e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{UnescapePathParamValues: unescape})})
			var got string
			e.GET("/orders/:id", func(c *echo.Context) error { got, _ = key.Build(c); return nil })
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
			if got != want {
				t.Errorf("UnescapePathParamValues %v: %s locked %q, want %q", unescape, target, got, want)
			}
		}
	}
}
