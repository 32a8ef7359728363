package echo5lock

import (
	"fmt"
	"reflect"

	"github.com/labstack/echo/v5"
)

// valuesEscaped reports whether echo left c's path values percent-encoded.
// echo v5's DefaultRouter routes on the raw path when the request's path has
// escapes of its own (URL.RawPath set) unless UseEscapedPathForMatching, and
// decodes the values only with UnescapePathParamValues. Those two settings
// are not exported once the router is built, so they are read through
// reflection, at field indices found once (routerLayout): ToMiddleware
// refuses to build the middleware, with why, if this version of echo has not
// the fields it reads, and a test pins them. Another Router implementation
// is taken to route on the raw path without decoding, as the default does.
func valuesEscaped(c *echo.Context) bool {
	if c.Request().URL.RawPath == "" {
		return false
	}
	dr, ok := c.Echo().Router().(*echo.DefaultRouter)
	if !ok || dr == nil {
		return true
	}
	v := reflect.ValueOf(dr).Elem()
	return !v.Field(layout.decodedPath).Bool() && !v.Field(layout.unescape).Bool()
}

// routerFields are the indices of the DefaultRouter's routing settings.
type routerFields struct{ decodedPath, unescape int }

var layout, layoutErr = routerLayout(reflect.TypeFor[echo.DefaultRouter]())

// routerLayout finds, in router (echo.DefaultRouter's type), the bool fields
// useEscapedPathForRouting and unescapePathParamValues.
func routerLayout(router reflect.Type) (routerFields, error) {
	var l routerFields
	for _, b := range []struct {
		name string
		idx  *int
	}{{"useEscapedPathForRouting", &l.decodedPath}, {"unescapePathParamValues", &l.unescape}} {
		f, ok := router.FieldByName(b.name)
		if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Bool {
			return l, fmt.Errorf("%s has no bool field %s", router, b.name)
		}
		*b.idx = f.Index[0]
	}
	return l, nil
}
