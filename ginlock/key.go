package ginlock

import (
	"github.com/gin-gonic/gin"
	"github.com/lockkit/lockkit/internal/adapt"

	"github.com/lockkit/lockkit/internal/keypart"
	"github.com/lockkit/lockkit/internal/keyspec"
)

// Part is one part of a lock key, read from a request. Make parts with
// Const, Param, Header, Query and Cookie, and anything else with Func; Key
// joins their values with core.JoinKey, as every lockkit adapter does.
type Part struct{ p keypart.Part[*gin.Context] }

var reader = keyspec.Reader[*gin.Context]{
	Param: func(c *gin.Context, name string) (string, bool, bool) {
		v, ok := c.Params.Get(name)
		return v, ok && paramsEscaped(c), ok
	},
	Header: func(c *gin.Context, name string) string {
		return c.Request.Header.Get(name)
	},
	Query: func(c *gin.Context, name string) string { return c.Query(name) },
	Cookie: func(c *gin.Context, name string) string {
		ck, err := c.Request.Cookie(name) // raw: keyspec.CookieValue decodes, as for every adapter
		if err != nil {
			return ""
		}
		return ck.Value
	},
}

// Const is a literal part: Const("order").
func Const(s string) Part { return Part{reader.Part(keyspec.Spec{Source: keyspec.Const, Name: s})} }

// Param is a path parameter of the matched route: Param("id") for
// "/orders/:id". A route without that parameter is a server mistake (500).
func Param(name string) Part {
	return Part{reader.Part(keyspec.Spec{Source: keyspec.Param, Name: name})}
}

// Header is a request header's first value: Header("X-Tenant").
func Header(name string) Part {
	return Part{reader.Part(keyspec.Spec{Source: keyspec.Header, Name: name})}
}

// Query is a query parameter's first value: Query("account").
func Query(name string) Part {
	return Part{reader.Part(keyspec.Spec{Source: keyspec.Query, Name: name})}
}

// Cookie is a cookie's value, percent-decoded once ('+' is a space), the
// same on every lockkit adapter: Cookie("session"). A value that does not
// decode answers 400.
func Cookie(name string) Part {
	return Part{reader.Part(keyspec.Spec{Source: keyspec.Cookie, Name: name})}
}

// Func is a part computed by f (from the body, the authenticated user, ...).
// Its value is one part: it is escaped like the others, so a ':' in it
// cannot forge another key. An error or "" answers 400.
func Func(f func(*gin.Context) (string, error)) Part {
	return Part{keypart.Part[*gin.Context]{Source: "func", Name: "Func", Get: f}}
}

// keyFunc builds a request's key.
type keyFunc = adapt.KeyFunc[*gin.Context]

func partsKey(parts []Part) keyFunc {
	ps := make([]keypart.Part[*gin.Context], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return func(c *gin.Context) (string, error) { return keypart.Build(c, ps) }
}

// routeKey is KeyFromRoute: the route template then every path parameter,
// in route order, each one a part.
func routeKey(c *gin.Context) (string, error) {
	parts := make([]keypart.Part[*gin.Context], 0, 1+len(c.Params))
	parts = append(parts, Const(c.FullPath()).p)
	for _, p := range c.Params {
		parts = append(parts, Param(p.Key).p)
	}
	return keypart.Build(c, parts)
}
