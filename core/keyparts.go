package core

import (
	"fmt"
	"strings"
)

// KeySeparator joins key parts. Inside a part, '\' and ':' are escaped with a
// backslash, so JoinKey("order", "42") is exactly "order:42" and
// JoinKey("a:b", "c") never equals JoinKey("a", "b:c").
const KeySeparator = ':'

// JoinKey builds a lock key from parts, escaping each. Every part must be
// non-empty: an empty part would let different resources share one key
// (*KeyPartError, matching ErrInvalidKey). Every adapter joins the parts it
// reads from a request with JoinKey, so a key built here from the same values
// is the key an adapter locks.
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
