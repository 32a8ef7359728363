package ginlock

import (
	"reflect"

	"github.com/gin-gonic/gin"
)

// paramsEscaped reports whether gin left c's path parameters
// percent-encoded: only when it routed on the raw path (Engine.UseRawPath)
// without decoding the values (Engine.UnescapePathValues false). By default
// gin routes on the decoded path and its parameters are decoded.
//
// gin.Context does not export its engine, so the two flags are read through
// reflection, and only for a request whose path has escapes of its own
// (URL.RawPath set): the common request pays nothing.
func paramsEscaped(c *gin.Context) bool {
	if c.Request == nil || c.Request.URL.RawPath == "" {
		return false
	}
	e := reflect.ValueOf(c).Elem().FieldByName("engine")
	if !e.IsValid() || e.IsNil() {
		return false
	}
	e = e.Elem()
	return e.FieldByName("UseRawPath").Bool() && !e.FieldByName("UnescapePathValues").Bool()
}
