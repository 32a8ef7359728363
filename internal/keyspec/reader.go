package keyspec

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/keypart"
)

// ErrNoRouteParam is the error of a Param part on a route that has no such
// path parameter: a mistake in the server's configuration (500), not in the
// request (400).
var ErrNoRouteParam = fmt.Errorf("%w: the matched route has no such path parameter", core.ErrKeyConfig)

// Reader reads the sources of a framework's request type R. Adapters fill
// it once; Part turns specs into keypart.Part[R] so every adapter reads
// each source the same way.
type Reader[R any] struct {
	// Param returns the path parameter name as the framework holds it;
	// escaped says the value is still percent-encoded (the framework routed
	// on the raw path and did not decode it), so PathValue decodes it once.
	// ok is false when the matched route has no such parameter.
	Param func(r R, name string) (value string, escaped, ok bool)
	// Header and Query return the first value, "" when absent.
	Header func(r R, name string) string
	Query  func(r R, name string) string
	// Cookie returns the cookie's value as net/http parses it
	// (http.Request.Cookie: one pair of double quotes stripped, nothing
	// decoded), "" when absent; CookieValue decodes it.
	Cookie func(r R, name string) string
}

// Part returns the key part for s. "" from a reader means missing:
// keypart.Build then fails with a *core.KeyPartError (400).
func (rd Reader[R]) Part(s Spec) keypart.Part[R] {
	p := keypart.Part[R]{Source: string(s.Source), Name: s.Name}
	name := s.Name
	switch s.Source {
	case Const:
		return keypart.Const[R](s.Name)
	case Param:
		p.Get = func(r R) (string, error) {
			v, escaped, ok := rd.Param(r, name)
			if !ok {
				return "", fmt.Errorf("%w: %q", ErrNoRouteParam, name)
			}
			return PathValue(v, escaped)
		}
	case Header:
		p.Get = func(r R) (string, error) { return rd.Header(r, name), nil }
	case Query:
		p.Get = func(r R) (string, error) { return rd.Query(r, name), nil }
	case Cookie:
		p.Get = func(r R) (string, error) { return CookieValue(rd.Cookie(r, name)) }
	default:
		// Parse rejects unknown sources; a Spec built by hand fails loudly
		// at request time instead of giving an empty or shared key.
		p.Get = func(R) (string, error) { return "", fmt.Errorf("unknown key source %q", s.Source) }
	}
	return p
}

// Parts returns Part of every spec, in order.
func (rd Reader[R]) Parts(specs []Spec) []keypart.Part[R] {
	out := make([]keypart.Part[R], len(specs))
	for i, s := range specs {
		out[i] = rd.Part(s)
	}
	return out
}

// WholeKey checks the result of a function that returns a complete key
// (echo's KeyFunc, a message's LockKey): used verbatim, not escaped, so
// "order:42" stays "order:42". An empty key or an error is a *core.KeyPartError
// (400) unless the error already matches core.ErrInvalidKey.
func WholeKey(key string, err error) (string, error) {
	switch {
	case err != nil:
		if errors.Is(err, core.ErrInvalidKey) {
			return "", err
		}
		return "", &core.KeyPartError{Source: "func", Name: "KeyFunc", Reason: "unreadable", Err: err}
	case key == "":
		return "", &core.KeyPartError{Source: "func", Name: "KeyFunc", Reason: "missing or empty"}
	}
	return key, nil
}

// errCookieEncoding is the error of a cookie whose value is not valid
// percent-encoding. It does not repeat the value: a cookie may be a secret.
var errCookieEncoding = errors.New("the cookie's value is not valid percent-encoding")

// CookieValue is the one rule for a cookie's value in a key: the value as
// net/http parses it, percent-decoded once as a form value ('+' is a
// space), as gin's Context.Cookie decodes it. Cookies have no encoding of
// their own, so handlers differ: a gin handler sees "%61cme" as "acme", a
// net/http or echo handler sees it as sent. Decoding for every adapter
// makes the key follow the handler that decodes, so that no spelling gives
// one resource two keys (spellings a raw handler tells apart then share a
// key: more exclusion, never less). A value that does not decode is a bad
// key (400), never used as sent.
func CookieValue(raw string) (string, error) {
	v, err := url.QueryUnescape(raw)
	if err != nil {
		return "", errCookieEncoding
	}
	return v, nil
}
