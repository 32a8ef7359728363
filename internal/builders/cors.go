package builders

import (
	"net/http"

	gincors "github.com/gin-contrib/cors"
	"github.com/gin-gonic/gin"
	chicors "github.com/go-chi/cors"
	echo4 "github.com/labstack/echo/v4"
	echo4mw "github.com/labstack/echo/v4/middleware"
	echo5 "github.com/labstack/echo/v5"
	echo5mw "github.com/labstack/echo/v5/middleware"
	"github.com/rs/cors"

	"github.com/lockkit/lockkit/testing/conformance"
)

// Each framework's common CORS middleware, allowing conformance.CORSOrigin,
// as a Route's CORS puts it before or after the lock. Where a middleware
// can pass OPTIONS on to the handler (rs/cors and go-chi/cors:
// OptionsPassthrough) it does: the lock must hold whatever reaches it.

var corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodOptions}

// ginCORS is gin-contrib/cors; it lets a request whose Origin is the
// server's own host through as same-origin, preflight or not.
func ginCORS() gin.HandlerFunc {
	return gincors.New(gincors.Config{AllowOrigins: []string{conformance.CORSOrigin}, AllowMethods: corsMethods})
}

// ginChain is lock and final with rt's CORS middleware in its place.
func ginChain(rt conformance.Route, lock, final gin.HandlerFunc) []gin.HandlerFunc {
	switch rt.CORS {
	case conformance.CORSBefore:
		return []gin.HandlerFunc{ginCORS(), lock, final}
	case conformance.CORSAfter:
		return []gin.HandlerFunc{lock, ginCORS(), final}
	}
	return []gin.HandlerFunc{lock, final}
}

// echoChain is lock with rt's CORS middleware (echo v4's) in its place, as
// a route's middleware list (the first runs first).
func echoChain(rt conformance.Route, lock echo4.MiddlewareFunc) []echo4.MiddlewareFunc {
	c := echo4mw.CORSWithConfig(echo4mw.CORSConfig{AllowOrigins: []string{conformance.CORSOrigin}, AllowMethods: corsMethods})
	switch rt.CORS {
	case conformance.CORSBefore:
		return []echo4.MiddlewareFunc{c, lock}
	case conformance.CORSAfter:
		return []echo4.MiddlewareFunc{lock, c}
	}
	return []echo4.MiddlewareFunc{lock}
}

// echo5Chain is echoChain for echo v5.
func echo5Chain(rt conformance.Route, lock echo5.MiddlewareFunc) []echo5.MiddlewareFunc {
	c := echo5mw.CORSWithConfig(echo5mw.CORSConfig{AllowOrigins: []string{conformance.CORSOrigin}, AllowMethods: corsMethods})
	switch rt.CORS {
	case conformance.CORSBefore:
		return []echo5.MiddlewareFunc{c, lock}
	case conformance.CORSAfter:
		return []echo5.MiddlewareFunc{lock, c}
	}
	return []echo5.MiddlewareFunc{lock}
}

// httpCORS wraps h, a net/http handler, with rt's CORS middleware: wrap is
// that middleware (rs/cors for ServeMux, go-chi/cors for chi), lock the
// lock.
func httpCORS(rt conformance.Route, wrap, lock func(http.Handler) http.Handler, h http.Handler) http.Handler {
	switch rt.CORS {
	case conformance.CORSBefore:
		return wrap(lock(h))
	case conformance.CORSAfter:
		return lock(wrap(h))
	}
	return lock(h)
}

// rsCORS is rs/cors, passing OPTIONS on.
func rsCORS(h http.Handler) http.Handler {
	return cors.New(cors.Options{AllowedOrigins: []string{conformance.CORSOrigin}, AllowedMethods: corsMethods, OptionsPassthrough: true}).Handler(h)
}

// chiCORS is go-chi/cors, passing OPTIONS on.
func chiCORS(h http.Handler) http.Handler {
	return chicors.Handler(chicors.Options{AllowedOrigins: []string{conformance.CORSOrigin}, AllowedMethods: corsMethods, OptionsPassthrough: true})(h)
}
