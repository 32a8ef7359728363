package conformance

import (
	"context"
	"net/http"
	"strings"
)

// withDeadlines puts each route's Deadline on the context of the requests
// it matches, in front of the adapter's handler (as a gateway, or
// gin-contrib/timeout in front of the lock, would): the suite does it, so
// that no builder has to.
func withDeadlines(h http.Handler, routes []Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := RouteDeadline(routes, r.Method, r.URL.Path); d > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// matches reports whether path matches route, whose ":name" segments match
// any one segment.
func matches(route, path string) bool {
	rs, ps := strings.Split(route, "/"), strings.Split(path, "/")
	if len(rs) != len(ps) {
		return false
	}
	for i := range rs {
		if !strings.HasPrefix(rs[i], ":") && rs[i] != ps[i] {
			return false
		}
	}
	return true
}
