package guard

import (
	"errors"
	"fmt"

	"github.com/lockkit/lockkit/core"
)

// Part is one part of a lock key, read from a request of type R (a
// *gin.Context, an echo.Context, a *http.Request, an RPC call). Every
// lockkit adapter makes its key parts here and joins their values with
// core.JoinKey (Join), so the same parts give the same key whatever serves
// the request: Const("order") and a path parameter 42 are "order:42"
// everywhere. An adapter wraps Part[R] in its own Part type, made by its own
// constructors, so that its users never write a type parameter.
type Part[R any] struct {
	// Source and Name say where the part comes from, as the user wrote it
	// ("param" "id", "header" "X-Tenant"); they appear only in error messages.
	Source, Name string
	get          func(R) (string, error)
}

// NewPart is a part of source and name whose value get reads: "" (with a
// nil error) means missing, the caller's mistake (400 / InvalidArgument);
// an error wrapping core.ErrKeyConfig is the server's (500 / Internal); any
// other error the caller's. The constructors below cover the sources every
// adapter shares; an adapter adds its protocol's own (gRPC metadata, a
// message field) with NewPart.
func NewPart[R any](source, name string, get func(R) (string, error)) Part[R] {
	if get == nil {
		panic(fmt.Sprintf("lockkit: key part %s %q without a reader", source, name))
	}
	return Part[R]{Source: source, Name: name, get: get}
}

// Const is a literal part. It panics when s is empty: an empty part would
// let different resources share a key, and a literal is fixed when the
// server is configured, so that is where the mistake must surface.
func Const[R any](s string) Part[R] {
	if s == "" {
		panic("lockkit: Const(\"\"): an empty key part would let different resources share a key")
	}
	return Part[R]{Source: "const", Name: s, get: func(R) (string, error) { return s, nil }}
}

// Func is a part computed by f (from the body, the authenticated user, ...).
// name only appears in error messages. Its value is one part, escaped like
// the others, so a ':' in it cannot forge another key.
func Func[R any](name string, f func(R) (string, error)) Part[R] {
	if f == nil {
		panic("lockkit: Func(" + name + ", nil)")
	}
	return Part[R]{Source: "func", Name: name, get: f}
}

var errZeroPart = fmt.Errorf("%w: a zero key part; make parts with the adapter's constructors", core.ErrKeyConfig)

// Key is how one lock key is read from a request: parts joined (Join), a
// whole key a function returns (Verbatim), or a route's key (RouteKey).
// The zero Key has no source; New refuses it.
type Key[R any] struct {
	build func(R) (string, error)
	// empty: made by Join without parts (an adapter's Key() given none).
	empty bool
	// route: made by RouteKey, the whole key of a request (KeyFromRoute).
	route bool
}

// Join is the key of parts, their values joined by core.JoinKey. Every part
// is required: a missing or empty one is a *core.KeyPartError naming it
// (the caller's mistake, core.ErrInvalidKey), or, when the part's error
// matches core.ErrKeyConfig, the server's; so is one with a control
// character (CheckValue). Join without parts is a configuration mistake New
// reports.
func Join[R any](parts ...Part[R]) Key[R] {
	ps := append([]Part[R](nil), parts...)
	return Key[R]{build: func(r R) (string, error) { return joinParts(r, ps) }, empty: len(ps) == 0}
}

// Verbatim is a whole key that f returns (echo's KeyFunc, a message's
// LockKey), used as it is, not escaped: "order:42" stays "order:42". An
// empty key or an error is a *core.KeyPartError of source "func" and name
// (the caller's mistake), unless the error already matches
// core.ErrInvalidKey or core.ErrKeyConfig, which is kept.
func Verbatim[R any](name string, f func(R) (string, error)) Key[R] {
	if f == nil {
		panic("lockkit: Verbatim(" + name + ", nil)")
	}
	return Key[R]{build: func(r R) (string, error) {
		key, err := f(r)
		switch {
		case err != nil && (errors.Is(err, core.ErrInvalidKey) || errors.Is(err, core.ErrKeyConfig)):
			return "", err
		case err != nil:
			return "", &core.KeyPartError{Source: "func", Name: name, Reason: "unreadable", Err: err}
		case key == "":
			return "", &core.KeyPartError{Source: "func", Name: name, Reason: "missing or empty"}
		}
		if err := CheckValue(key); err != nil {
			return "", &core.KeyPartError{Source: "func", Name: name, Reason: "invalid", Err: err}
		}
		return key, nil
	}}
}

// KeyFunc is a key f builds itself, its errors kept as they are: f says
// whose mistake a failure is, with an error matching core.ErrInvalidKey
// (the caller's: 400 / InvalidArgument) or core.ErrKeyConfig (the server's:
// 500 / Internal). An RPC message's LockKey() is one. A key with a control
// character is the caller's mistake (CheckValue).
func KeyFunc[R any](f func(R) (string, error)) Key[R] {
	if f == nil {
		panic("lockkit: KeyFunc(nil)")
	}
	return Key[R]{build: func(r R) (string, error) {
		key, err := f(r)
		if err == nil {
			if err = CheckValue(key); err != nil {
				err = &core.KeyPartError{Source: "func", Name: "KeyFunc", Reason: "invalid", Err: err}
			}
		}
		return key, err
	}}
}

// ErrControlChar is the error (400 / InvalidArgument, inside a
// *core.KeyPartError) of a key value with a control character.
var ErrControlChar = errors.New("a control character (U+0000-U+001F, U+007F) cannot be part of a lock key")

// CheckValue is the one validation of what a request puts in a lock key,
// whatever its source (a path parameter, a header, a query value, a cookie,
// RPC metadata, a message field, a key function's result): a control
// character (U+0000–U+001F, U+007F) is refused. No resource id holds one,
// and it would reach logs and Redis keys unescaped. The error names the
// byte's position, never the value, which may be a secret (a cookie).
func CheckValue(v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: at byte %d", ErrControlChar, i)
		}
	}
	return nil
}

// Value is p's value read from r, as its source hands it over and
// decodes it (a -bin metadata entry's bytes, a message field's text), not
// yet checked nor escaped: "" with a nil error when r does not carry it.
// Join checks and escapes it into a key; an RPC idempotency key reads
// its client's key through it (package rpckey) and checks it by the
// idempotency key's rule instead.
func (p Part[R]) Value(r R) (string, error) {
	if p.get == nil {
		return "", errZeroPart
	}
	return p.get(r)
}

// Alone marks k as a request's whole key, which no other key may join
// (KeyFromRoute); New refuses it beside another.
func Alone[R any](k Key[R]) Key[R] {
	k.route = true
	return k
}

// Build reads the key from r.
func (k Key[R]) Build(r R) (string, error) {
	if k.build == nil {
		return "", fmt.Errorf("%w: a zero Key", core.ErrKeyConfig)
	}
	return k.build(r)
}

// joinParts evaluates parts on r and joins them with core.JoinKey.
func joinParts[R any](r R, parts []Part[R]) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: no key parts", core.ErrInvalidKey)
	}
	vals := make([]string, len(parts))
	for i, p := range parts {
		if p.get == nil { // the zero value of an adapter's part type
			return "", &core.KeyPartError{Index: i, Reason: "misconfigured", Err: errZeroPart}
		}
		v, err := p.get(r)
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
		if err := CheckValue(v); err != nil {
			return "", &core.KeyPartError{Index: i, Source: p.Source, Name: p.Name, Reason: "invalid", Err: err}
		}
		vals[i] = v
	}
	return core.JoinKey(vals...)
}
