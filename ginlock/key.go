package ginlock

import (
	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/guard"
)

// Part is one part of a lock key, read from a request. Make parts with
// Const, Param, Header, Query and Cookie, and anything else with Func; Key
// joins their values with core.JoinKey, as every lockkit adapter does.
type Part struct{ p guard.Part[*gin.Context] }

// reader reads gin's request for the key parts of package guard.
type reader struct{}

func (reader) Param(c *gin.Context, name string) (string, bool) { return c.Params.Get(name) }

func (reader) Route(c *gin.Context) (string, []string) {
	names := make([]string, len(c.Params))
	for i, p := range c.Params {
		names[i] = p.Key
	}
	return c.FullPath(), names
}

func (reader) Header(c *gin.Context, name string) string { return c.Request.Header.Get(name) }
func (reader) HeaderValues(c *gin.Context, name string) []string {
	return c.Request.Header.Values(name)
}
func (reader) Cookies(c *gin.Context) []string { return c.Request.Header["Cookie"] }
func (reader) RawQuery(c *gin.Context) string  { return c.Request.URL.RawQuery }

// Const is a literal part: Const("order"). It panics when empty.
func Const(s string) Part { return Part{guard.Const[*gin.Context](s)} }

// Param is a path parameter of the matched route: Param("id") for
// "/orders/:id". A route without that parameter is a server mistake (500).
func Param(name string) Part { return Part{guard.Param[*gin.Context](reader{}, name)} }

// Header is a request header's first value: Header("X-Tenant").
func Header(name string) Part { return Part{guard.Header[*gin.Context](reader{}, name)} }

// Query is a query parameter's first value: Query("account").
func Query(name string) Part { return Part{guard.Query[*gin.Context](reader{}, name)} }

// Cookie is a cookie's value, percent-decoded once ('+' is a space), the
// same on every lockkit adapter: Cookie("session"). A value that does not
// decode answers 400.
func Cookie(name string) Part { return Part{guard.Cookie[*gin.Context](reader{}, name)} }

// Func is a part computed by f (from the body, the authenticated user, ...).
// Its value is one part: it is escaped like the others, so a ':' in it
// cannot forge another key. An error or "" answers 400.
func Func(f func(*gin.Context) (string, error)) Part {
	return Part{guard.Func("Func", f)}
}

// join is the key of parts.
func join(parts []Part) guard.Key[*gin.Context] {
	ps := make([]guard.Part[*gin.Context], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return guard.Join(ps...)
}
