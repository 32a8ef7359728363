// Package keypart is how every lockkit adapter builds a lock key from parts
// read off a request: a Part has a source and a name (for error messages)
// and a getter, and Build evaluates the parts on one request and joins their
// values with core.JoinKey. Because every adapter builds keys here, the same
// parts give the same key in gin, echo, net/http and gRPC: Const("order") and
// a path parameter 42 are "order:42" everywhere.
//
// Users never see this package. Each adapter wraps Part in its own opaque
// part type (ginlock.Part, httplock.Part, grpclock.KeyPart) made only by its
// constructors (Const, Param, Header, ..., and Func for a custom part), so
// the adapters' public API does not carry a generic type of lockkit.
package keypart

import (
	"errors"
	"fmt"

	"github.com/lockkit/lockkit/core"
)

// Part is one part of a lock key taken from a request of type R (a
// *gin.Context, an echo.Context, a *http.Request, a gRPC call).
type Part[R any] struct {
	// Source and Name say where the part comes from ("param" "id", "header"
	// "X-Tenant"); they only appear in error messages.
	Source, Name string
	// Get returns the part's value; "" (with a nil error) means missing. An
	// error wrapping core.ErrKeyConfig is the server's mistake (500 /
	// Internal); any other error is the caller's (400 / InvalidArgument).
	Get func(R) (string, error)
}

// Const is a literal key part. It panics when s is empty: an empty part
// would let different resources share a key, and a literal is fixed when
// the server is configured, so that is where the mistake must surface.
func Const[R any](s string) Part[R] {
	if s == "" {
		panic("lockkit: Const(\"\"): an empty key part would let different resources share a key")
	}
	return Part[R]{Source: "const", Name: s, Get: func(R) (string, error) { return s, nil }}
}

var errZeroPart = fmt.Errorf("%w: a zero key part; make parts with the adapter's constructors", core.ErrKeyConfig)

// Build evaluates parts on r and joins them with core.JoinKey. A missing or
// empty part gives a *core.KeyPartError naming it (errors.Is
// core.ErrInvalidKey), or, when its getter's error matches core.ErrKeyConfig,
// one that matches only that. A zero Part (no getter) is the server's
// mistake too.
func Build[R any](r R, parts []Part[R]) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: no key parts", core.ErrInvalidKey)
	}
	vals := make([]string, len(parts))
	for i, p := range parts {
		if p.Get == nil { // the zero value of an adapter's part type
			return "", &core.KeyPartError{Index: i, Reason: "misconfigured", Err: errZeroPart}
		}
		v, err := p.Get(r)
		if err != nil {
			reason := "unreadable"
			if errors.Is(err, core.ErrKeyConfig) {
				reason = "misconfigured"
			}
			return "", &core.KeyPartError{Index: i, Source: p.Source, Name: p.Name, Reason: reason, Err: err}
		}
		if v == "" {
			return "", &core.KeyPartError{Index: i, Source: p.Source, Name: p.Name, Reason: "missing or empty"}
		}
		vals[i] = v
	}
	return core.JoinKey(vals...)
}
