package ginlock

import (
	"fmt"
	"reflect"

	"github.com/gin-gonic/gin"
)

// paramsEscaped reports whether gin left c's path parameters
// percent-encoded: when it routed on the escaped path (Engine.UseEscapedPath,
// or Engine.UseRawPath for a request whose path has escapes of its own)
// without decoding the values (Engine.UnescapePathValues false). By default
// gin routes on the decoded path and its parameters are decoded.
//
// gin.Context does not export its engine, so the settings are read through
// reflection, at field indices found once (engineLayout). That cannot
// silently read nothing: New refuses to build the middleware, with why, if
// this version of gin has not the fields it reads, and a test pins them.
func paramsEscaped(c *gin.Context) bool {
	e := reflect.ValueOf(c).Elem().Field(layout.engine)
	if e.IsNil() {
		return false
	}
	e = e.Elem()
	if e.Field(layout.unescape).Bool() {
		return false
	}
	return e.Field(layout.escapedPath).Bool() || (e.Field(layout.rawPath).Bool() && c.Request.URL.RawPath != "")
}

// engineFields are the indices of gin.Context's engine field and of the
// Engine's routing settings.
type engineFields struct {
	engine, rawPath, escapedPath, unescape int
}

var layout, layoutErr = engineLayout(reflect.TypeFor[gin.Context]())

// engineLayout finds, in ctx (gin.Context's type), the field *gin.Engine
// engine and the Engine's bool fields UseRawPath, UseEscapedPath and
// UnescapePathValues.
func engineLayout(ctx reflect.Type) (engineFields, error) {
	var l engineFields
	f, ok := ctx.FieldByName("engine")
	if !ok || len(f.Index) != 1 || f.Type != reflect.TypeFor[*gin.Engine]() {
		return l, fmt.Errorf("%s has no field engine of type *gin.Engine", ctx)
	}
	l.engine = f.Index[0]
	et := f.Type.Elem()
	for _, b := range []struct {
		name string
		idx  *int
	}{{"UseRawPath", &l.rawPath}, {"UseEscapedPath", &l.escapedPath}, {"UnescapePathValues", &l.unescape}} {
		f, ok := et.FieldByName(b.name)
		if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Bool {
			return l, fmt.Errorf("gin.Engine has no bool field %s", b.name)
		}
		*b.idx = f.Index[0]
	}
	return l, nil
}
