package httplock

import (
	"net/http"
	"strings"

	"github.com/lockkit/lockkit/guard"
)

// Part is one part of a lock key, read from a request. Make parts with
// Const, Param, Header, Query and Cookie, and anything else with Func;
// Key joins their values with core.JoinKey, as every lockkit adapter does.
type Part struct{ p guard.Part[*http.Request] }

// reader reads net/http's request for the key parts of package guard.
type reader struct{}

func (reader) Header(r *http.Request, name string) string         { return r.Header.Get(name) }
func (reader) HeaderValues(r *http.Request, name string) []string { return r.Header.Values(name) }
func (reader) Cookies(r *http.Request) []string                   { return r.Header["Cookie"] }
func (reader) RawQuery(r *http.Request) string                    { return r.URL.RawQuery }
func (reader) Param(r *http.Request, name string) (string, bool)  { return pathValue(r, name) }
func (reader) Route(r *http.Request) (string, []string)           { return route(r.Pattern) }

// Const is a literal part: Const("order"). It panics when empty.
func Const(s string) Part { return Part{guard.Const[*http.Request](s)} }

// Param is a path wildcard of the matched pattern, what r.PathValue(name)
// reads: Param("id") for "POST /orders/{id}/pay" (http.ServeMux, or chi,
// which also sets r.Pattern and the path values). It is the router's own
// value, the one its handler reads (chi.URLParam is the same), whatever a
// path middleware rewrote (chi's CleanPath, URLFormat, StripSlashes), and
// decoded by guard.ParamValue whether the router decoded it (ServeMux) or
// not (chi). A pattern without the wildcard, or a request no router
// matched yet (the middleware wrapped a whole mux), is the server's
// mistake: 500. The name is every lockkit adapter's for a path parameter
// (ginlock.Param, echo's "param:id").
func Param(name string) Part { return Part{guard.Param[*http.Request](reader{}, name)} }

// Header is a request header's first value: Header("X-Tenant").
func Header(name string) Part { return Part{guard.Header[*http.Request](reader{}, name)} }

// Query is a query parameter's first value: Query("account").
func Query(name string) Part { return Part{guard.Query[*http.Request](reader{}, name)} }

// Cookie is a cookie's value, percent-decoded once ('+' is a space), the
// same on every lockkit adapter: Cookie("session"). A value that does not
// decode answers 400.
func Cookie(name string) Part { return Part{guard.Cookie[*http.Request](reader{}, name)} }

// Func is a part computed by f (from the body, the authenticated user, ...).
// Its value is one part, escaped like the others. An error or "" answers 400.
func Func(f func(*http.Request) (string, error)) Part {
	return Part{guard.Func("Func", f)}
}

// route is the path of pattern (without its method and host) and the
// names of its wildcards, in order: what KeyFromRoute keys by. An empty
// pattern (a request no router matched yet) has no route.
func route(pattern string) (string, []string) {
	if pattern == "" {
		return "", nil
	}
	path := patternPath(pattern)
	var names []string
	for rest := path; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		name := rest[i+1 : i+j]
		name, _ = strings.CutSuffix(name, "...")
		if k := strings.IndexByte(name, ':'); k >= 0 {
			name = name[:k]
		}
		if name != "" {
			names = append(names, name)
		}
		rest = rest[i+j+1:]
	}
	if strings.HasSuffix(path, "/*") { // chi's catch-all
		names = append(names, "*")
	}
	return path, names
}

// patternPath is pattern without its method ("POST ") and host.
func patternPath(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 { // "POST /orders/{id}"
		pattern = strings.TrimLeft(pattern[i+1:], " ")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 { // "example.com/orders/{id}"
		pattern = pattern[i:]
	}
	return pattern
}

// pathValue is the router's value of wildcard name, r.PathValue(name), when
// r.Pattern has the wildcard. It runs on every request with a Param part,
// so it walks the pattern in place and allocates nothing.
func pathValue(r *http.Request, name string) (string, bool) {
	if r.Pattern == "" {
		return "", false // not routed (yet): a whole mux is wrapped
	}
	for rest := patternPath(r.Pattern); rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if w, _, ok := wildcard(seg); (ok && w == name) || (!ok && inSegment(seg, name)) || (seg == "*" && name == "*" && rest == "") {
			return r.PathValue(name), true
		}
	}
	return "", false
}

// wildcard reads a whole-segment wildcard: "{id}", "{rest...}" (ServeMux),
// "{id:[0-9]+}" (chi); not "{a}-{b}", two wildcards in one segment.
func wildcard(seg string) (name string, rest, ok bool) {
	if len(seg) < 2 || seg[0] != '{' || seg[len(seg)-1] != '}' {
		return "", false, false
	}
	name = seg[1 : len(seg)-1]
	name, rest = strings.CutSuffix(name, "...")
	if j := strings.IndexByte(name, ':'); j >= 0 {
		name = name[:j]
	}
	if strings.ContainsAny(name, "{}") {
		return "", false, false
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
