package core

import (
	"errors"
	"fmt"
	"strings"
)

// KeySeparator joins key parts. Inside a part, '\' and ':' are escaped with a
// backslash, so JoinKey("order", "42") is exactly "order:42" and
// JoinKey("a:b", "c") never equals JoinKey("a", "b:c").
const KeySeparator = ':'

// JoinKey builds a lock key from parts, escaping each. Every part must be
// non-empty: an empty part would let different resources share one key.
func JoinKey(parts ...string) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: no key parts", ErrInvalidKey)
	}
	n := len(parts) - 1
	for i, p := range parts {
		if p == "" {
			return "", &KeyPartError{Index: i, Reason: "empty"}
		}
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n + 8)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(KeySeparator)
		}
		escapePart(&b, p)
	}
	return b.String(), nil
}

func escapePart(b *strings.Builder, p string) {
	if !strings.ContainsAny(p, `\:`) {
		b.WriteString(p)
		return
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '\\' || c == KeySeparator {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
}

// KeyPart is one part of a lock key taken from a request of type R (a
// *gin.Context, an echo.Context, a gRPC message, ...). Adapters define their
// part constructors on top of it, so gin, echo and gRPC build keys with the
// same code and the same parts give the same key everywhere.
type KeyPart[R any] struct {
	// Source and Name say where the part comes from ("param" "id", "header"
	// "X-Tenant"); they only appear in error messages.
	Source, Name string
	// Get returns the part's value; "" (with a nil error) means missing.
	Get func(R) (string, error)
}

// Const is a literal key part. It panics when s is empty: an empty part
// would let different resources share a key, and a literal is fixed when
// the server is configured, so that is where the mistake must surface.
func Const[R any](s string) KeyPart[R] {
	if s == "" {
		panic("lockkit: Const(\"\"): an empty key part would let different resources share a key")
	}
	return KeyPart[R]{Source: "const", Name: s, Get: func(R) (string, error) { return s, nil }}
}

// BuildKey evaluates parts on r and joins them with JoinKey. A missing or
// empty part gives a *KeyPartError (errors.Is ErrInvalidKey) naming it.
func BuildKey[R any](r R, parts []KeyPart[R]) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: no key parts", ErrInvalidKey)
	}
	vals := make([]string, len(parts))
	for i, p := range parts {
		v, err := p.Get(r)
		if err != nil {
			reason := "unreadable"
			if errors.Is(err, ErrKeyConfig) {
				reason = "misconfigured"
			}
			return "", &KeyPartError{Index: i, Source: p.Source, Name: p.Name, Reason: reason, Err: err}
		}
		if v == "" {
			return "", &KeyPartError{Index: i, Source: p.Source, Name: p.Name, Reason: "missing or empty"}
		}
		vals[i] = v
	}
	return JoinKey(vals...)
}
