package httplock

import (
	"net/http"
	"strings"

	"github.com/lockkit/lockkit/internal/keypart"
	"github.com/lockkit/lockkit/internal/keyspec"
)

// Part is one part of a lock key, read from a request. Make parts with
// Const, PathValue, Header, Query and Cookie, and anything else with Func;
// Key joins their values with core.JoinKey, as every lockkit adapter does.
type Part struct{ p keypart.Part[*http.Request] }

var reader = keyspec.Reader[*http.Request]{
	Param: pathValue,
	Header: func(r *http.Request, name string) string {
		return r.Header.Get(name)
	},
	Query: func(r *http.Request, name string) string { return r.URL.Query().Get(name) },
	Cookie: func(r *http.Request, name string) string {
		c, err := r.Cookie(name)
		if err != nil {
			return ""
		}
		return c.Value
	},
}

// Const is a literal part: Const("order"). It panics when empty.
func Const(s string) Part { return Part{reader.Part(keyspec.Spec{Source: keyspec.Const, Name: s})} }

// PathValue is a path wildcard of the matched pattern: PathValue("id") for
// "POST /orders/{id}/pay" (http.ServeMux, or chi, which also sets
// r.Pattern and the path values). The value is the id decoded exactly once
// whatever the router did (ServeMux decodes, chi does not): it is read from
// the request's escaped path at the wildcard's place in r.Pattern. A pattern
// without the wildcard, or a request no router matched yet (the middleware
// wrapped a whole mux), is the server's mistake: 500.
func PathValue(name string) Part {
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
// Its value is one part, escaped like the others. An error or "" answers 400.
func Func(f func(*http.Request) (string, error)) Part {
	return Part{keypart.Part[*http.Request]{Source: "func", Name: "Func", Get: f}}
}

// pathValue finds wildcard name in r.Pattern and returns the request's
// escaped path at the same place, for keyspec.PathValue to decode once. It
// runs on every request with a PathValue part, so it walks the two paths in
// place and allocates nothing.
func pathValue(r *http.Request, name string) (string, bool, bool) {
	pattern := r.Pattern
	if pattern == "" {
		return "", false, false // not routed (yet): a whole mux is wrapped
	}
	if i := strings.IndexByte(pattern, ' '); i >= 0 { // "POST /orders/{id}"
		pattern = strings.TrimLeft(pattern[i+1:], " ")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 { // "example.com/orders/{id}"
		pattern = pattern[i:]
	}
	var seg string
	for i, more := 0, true; more; i++ {
		seg, pattern, more = strings.Cut(pattern, "/")
		w, rest, isWildcard := wildcard(seg)
		switch {
		case isWildcard && w == name:
			v, tail, ok := nthSegment(r.URL.EscapedPath(), i)
			switch {
			case !ok:
				return "", false, true // e.g. "{rest...}" matching nothing
			case rest:
				return tail, true, true
			}
			return v, true, true
		case !isWildcard && inSegment(seg, name):
			// A wildcard inside a segment (chi's "{a}-{b}"): chi hands its
			// value over as routed, escaped when the path had escapes.
			return r.PathValue(name), r.URL.RawPath != "", true
		}
	}
	if seg == "*" && name == "*" { // chi's catch-all, the pattern's last segment
		return r.PathValue("*"), r.URL.RawPath != "", true
	}
	return "", false, false
}

// wildcard reads a whole-segment wildcard: "{id}", "{rest...}" (ServeMux),
// "{id:[0-9]+}" (chi).
func wildcard(seg string) (name string, rest, ok bool) {
	if len(seg) < 2 || seg[0] != '{' || seg[len(seg)-1] != '}' {
		return "", false, false
	}
	name = seg[1 : len(seg)-1]
	name, rest = strings.CutSuffix(name, "...")
	if j := strings.IndexByte(name, ':'); j >= 0 {
		name = name[:j]
	}
	return name, rest, true
}

// inSegment reports whether seg holds wildcard name among other text
// ("{name}" or "{name:regexp}").
func inSegment(seg, name string) bool {
	for {
		j := strings.IndexByte(seg, '{')
		if j < 0 {
			return false
		}
		seg = seg[j+1:]
		if after, ok := strings.CutPrefix(seg, name); ok && after != "" && (after[0] == '}' || after[0] == ':') {
			return true
		}
	}
}

// nthSegment returns path's segment i ('/'-separated, 0 before the leading
// slash) and the path from that segment on.
func nthSegment(path string, i int) (seg, tail string, ok bool) {
	for ; i > 0; i-- {
		j := strings.IndexByte(path, '/')
		if j < 0 {
			return "", "", false
		}
		path = path[j+1:]
	}
	seg, _, _ = strings.Cut(path, "/")
	return seg, path, true
}
