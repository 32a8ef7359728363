package guard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/lockkit/lockkit/core"
)

// HTTPReader reads what HTTP key parts need from a framework's request type
// R, as the framework holds it: no net/http type is needed, so a framework
// on its own HTTP stack (fiber on fasthttp) reads its requests without
// converting them. An adapter implements it once (a zero-size type is
// enough). It hands over each source as sent; the part constructors below
// apply the one decoding rule of each (QueryValue, CookieValue,
// ParamValue), so every adapter reads each source the same way.
type HTTPReader[R any] interface {
	// Header is the first value of r's header name, "" when it has none,
	// the name matched as HTTP matches names, whatever their case.
	Header(r R, name string) string
	// Cookies are r's Cookie header lines, as sent.
	Cookies(r R) []string
	// RawQuery is r's query string as sent, without its '?'.
	RawQuery(r R) string
	// Param returns the path parameter name of the matched route exactly as
	// the framework hands it to the handler, escaped or not, whatever
	// middleware rewrote the path it routed on: ParamValue decodes it
	// either way. ok is false when the matched route has no such parameter.
	Param(r R, name string) (value string, ok bool)
	// Route returns the matched route's template ("/orders/:id/pay"), ""
	// when the request matched no route, and the names of its path
	// parameters in route order (KeyFromRoute).
	Route(r R) (template string, params []string)
}

// ErrNoRouteParam is the error of a Param part on a route that has no such
// path parameter: a mistake in the server's configuration (500), not in the
// request (400). Every HTTP adapter returns it.
var ErrNoRouteParam = fmt.Errorf("%w: the matched route has no such path parameter", core.ErrKeyConfig)

// Param is the path parameter name of the matched route, as the handler
// reads it, decoded by ParamValue: Param(rd, "id") for "/orders/:id/pay" or
// "/orders/{id}/pay". A route without it is ErrNoRouteParam.
func Param[R any](rd HTTPReader[R], name string) Part[R] {
	return NewPart("param", name, func(r R) (string, error) {
		v, ok := rd.Param(r, name)
		if !ok {
			return "", fmt.Errorf("%w: %q", ErrNoRouteParam, name)
		}
		return ParamValue(v)
	})
}

// Header is a request header's first value, as sent.
func Header[R any](rd HTTPReader[R], name string) Part[R] {
	return NewPart("header", name, func(r R) (string, error) { return rd.Header(r, name), nil })
}

// Query is a query parameter's first value, decoded once (QueryValue).
func Query[R any](rd HTTPReader[R], name string) Part[R] {
	return NewPart("query", name, func(r R) (string, error) { return QueryValue(rd.RawQuery(r), name), nil })
}

// Cookie is a cookie's value as net/http parses it (CookieRaw: one pair of
// double quotes stripped), decoded by CookieValue; "" when absent.
func Cookie[R any](rd HTTPReader[R], name string) Part[R] {
	return NewPart("cookie", name, func(r R) (string, error) {
		raw, ok := CookieRaw(rd.Cookies(r), name)
		if !ok {
			return "", nil
		}
		return CookieValue(raw)
	})
}

// RouteKey is the key of the matched route: its template, then the value
// of every path parameter in route order, each a part decoded by ParamValue
// (KeyFromRoute in every adapter). Identical requests share it; other routes
// or parameters do not.
func RouteKey[R any](rd HTTPReader[R]) Key[R] {
	return Key[R]{build: func(r R) (string, error) {
		template, params := rd.Route(r)
		if template == "" {
			return "", fmt.Errorf("%w: KeyFromRoute on a request no route matched", core.ErrKeyConfig)
		}
		parts := make([]Part[R], 0, 1+len(params))
		parts = append(parts, Const[R](template))
		for _, p := range params {
			parts = append(parts, Param(rd, p))
		}
		return joinParts(r, parts)
	}, route: true}
}

// ErrParamValue is the error (400) of a path parameter that cannot name a
// resource: one still percent-encoded after MaxParamDecodes decodings.
var ErrParamValue = errors.New("path parameter is not a valid resource id")

// MaxParamDecodes bounds how many times ParamValue decodes a path
// parameter, so that a client's "%252525..." costs a bounded amount of work.
const MaxParamDecodes = 8

// ParamValue is the one rule every HTTP adapter applies to a path parameter
// before it becomes a key part, so the same resource gets the same key
// whatever framework serves it, whatever middleware rewrote the path it
// routed on, and however the client spelled its id:
//
//   - The value is percent-decoded until no escape is left (at most
//     MaxParamDecodes times; a value still encoded then is refused with
//     ErrParamValue, 400). Frameworks hand a parameter over decoded (gin,
//     net/http's ServeMux) or still escaped (echo, chi, when the path had
//     escapes they routed on), and a path middleware (chi's CleanPath,
//     URLFormat, StripSlashes) changes which, per request: a value decoded
//     to its end is the same whichever the framework did. So "%34%32" and
//     "42" are one id, and so are "%c3%a9" and "%C3%A9". The price is that
//     spellings a handler tells apart can share a key ("%2525", "%25" and
//     "%" are one id here): more exclusion, never less. A '%' that starts
//     no escape ("100%") is part of the id.
//   - An encoded slash is part of the id: "a%2Fb" is the id "a/b". gin does
//     not route such a request to a one-segment parameter at all (404);
//     echo, chi and net/http's ServeMux do, and the id is "a/b" there.
//
// Nothing else is normalised: case, Unicode forms and invalid UTF-8 are
// kept byte for byte, so "ABC" and "abc", or "é" composed and decomposed,
// are different ids (as they are different ids to a handler). A control
// character in the id is refused with every other key value's (Join).
func ParamValue(v string) (string, error) {
	for i := 0; strings.IndexByte(v, '%') >= 0; i++ {
		d, err := url.PathUnescape(v)
		if err != nil {
			break // a '%' that starts no escape: part of the id
		}
		if i == MaxParamDecodes {
			return "", fmt.Errorf("%w: still percent-encoded after %d decodings", ErrParamValue, MaxParamDecodes)
		}
		v = d
	}
	return v, nil
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

// SafeMethod reports whether an HTTP method takes the read side when the
// side is chosen by method (Config.SideByMethod): GET and HEAD. Every other
// method, OPTIONS included, takes the write side: a handler registered for
// any method (a ServeMux pattern without one, gin's Any) may write whatever
// the method.
func SafeMethod(method string) bool { return method == http.MethodGet || method == http.MethodHead }
