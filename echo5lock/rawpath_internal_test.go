package echo5lock

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/labstack/echo/v5"
)

// The reflection reads echo's router settings in the echo this module
// builds with (an echo that renamed the fields fails here and in
// ToMiddleware, never silently), and a type without them is refused.
func TestRouterLayout(t *testing.T) {
	for _, unescape := range []bool{false, true} {
		e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{UnescapePathParamValues: unescape})})
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/orders/%34%32", nil), httptest.NewRecorder())
		if layoutErr != nil || valuesEscaped(c) == unescape {
			t.Fatalf("UnescapePathParamValues %v: values escaped %v (layout: %v)", unescape, valuesEscaped(c), layoutErr)
		}
	}
	if _, err := routerLayout(reflect.TypeFor[struct{ unescapePathParamValues bool }]()); err == nil {
		t.Fatal("a router without useEscapedPathForRouting was accepted")
	}
}
