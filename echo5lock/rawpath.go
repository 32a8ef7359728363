package echo5lock

import (
	"reflect"

	"github.com/labstack/echo/v5"
)

// valuesEscaped reports whether echo left c's path values percent-encoded.
// echo v5's DefaultRouter routes on the raw path when the request's path has
// escapes of its own (URL.RawPath set) unless UseEscapedPathForMatching, and
// decodes the values only with UnescapePathParamValues. Those two settings
// are not exported once the router is built, so they are read through
// reflection, and only for a request with a RawPath: the common request
// pays nothing. Another Router implementation is taken to route on the raw
// path without decoding, as the default does.
func valuesEscaped(c *echo.Context) bool {
	if c.Request().URL.RawPath == "" {
		return false
	}
	dr, ok := c.Echo().Router().(*echo.DefaultRouter)
	if !ok || dr == nil {
		return true
	}
	v := reflect.ValueOf(dr).Elem()
	decodedPath, unescape := v.FieldByName("useEscapedPathForRouting"), v.FieldByName("unescapePathParamValues")
	if !decodedPath.IsValid() || !unescape.IsValid() {
		return true
	}
	return !decodedPath.Bool() && !unescape.Bool()
}
