package echolock

import (
	"reflect"
	"sync"

	"github.com/labstack/echo/v4"
)

// maxRouteTemplates bounds the route table. Its keys are route templates
// (c.Path()), which the server defines, never the request's method or path;
// the bound only guards against a router that reports something else.
const maxRouteTemplates = 4096

// routeTable remembers, per route template, whether echo serves it only
// through a catch-all RouteNotFound route and which methods it has. echo v4
// gives a 405 the path of the route it nearly matched, and a group's Use
// sends unmatched paths through the group's middleware on a catch-all
// RouteNotFound route: neither is a route to lock. It is read from
// e.Routes() once per template; a request's method is looked up, never
// stored, so no client can grow it.
type routeTable struct {
	mu     sync.RWMutex
	byPath map[string]routeSet
}

type routeSet struct {
	catchAll bool
	methods  map[string]bool
}

var (
	notFoundPtr         = reflect.ValueOf(echo.NotFoundHandler).Pointer()
	methodNotAllowedPtr = reflect.ValueOf(echo.MethodNotAllowedHandler).Pointer()
)

// routed reports whether the request matched a route of its own.
func (t *routeTable) routed(c echo.Context, path string) bool {
	if path == "" {
		return false
	}
	if h := reflect.ValueOf(c.Handler()).Pointer(); h == notFoundPtr || h == methodNotAllowedPtr {
		return false
	}
	t.mu.RLock()
	rs, ok := t.byPath[path]
	t.mu.RUnlock()
	if !ok {
		rs = routesOf(c.Echo(), path)
		t.mu.Lock()
		if t.byPath == nil {
			t.byPath = map[string]routeSet{}
		}
		if len(t.byPath) < maxRouteTemplates {
			t.byPath[path] = rs
		}
		t.mu.Unlock()
	}
	return !rs.catchAll || rs.methods[c.Request().Method]
}

// Len is the number of templates remembered (tests).
func (t *routeTable) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byPath)
}

func routesOf(e *echo.Echo, path string) routeSet {
	rs := routeSet{methods: map[string]bool{}}
	for _, r := range e.Routes() {
		if r.Path != path {
			continue
		}
		if r.Method == echo.RouteNotFound {
			rs.catchAll = true
		} else {
			rs.methods[r.Method] = true
		}
	}
	return rs
}
