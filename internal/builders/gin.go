package builders

import (
	"io"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Gin serves routes with gin (Recovery in front) and ginlock.
var Gin = conformance.Adapter{Name: "gin", Build: buildGin}

var ginOptions = optionSet[ginlock.Option, ginlock.Part]{
	key: ginlock.Key, keyFromRoute: ginlock.KeyFromRoute, wait: ginlock.Wait, ttl: ginlock.TTL, maxHold: ginlock.MaxHold,
	noWait: ginlock.NoWait, failOpen: ginlock.FailOpen, tokenHeader: ginlock.TokenHeader, limit: ginlock.Limit,
	byMethod: ginlock.ReadWrite, readSide: ginlock.ReadSide, writeSide: ginlock.WriteSide, acquireOptions: ginlock.AcquireOptions,
	parts: map[string]func(string) ginlock.Part{"const": ginlock.Const, "param": ginlock.Param, "header": ginlock.Header, "query": ginlock.Query, "cookie": ginlock.Cookie},
	releaseError: func(f func(error)) ginlock.Option {
		return ginlock.OnReleaseError(func(_ *gin.Context, err error) { f(err) })
	},
	nilResponders: func() []ginlock.Option {
		return customThenNil(ginlock.Responder(func(c *gin.Context, _ error) { c.String(http.StatusTeapot, "custom") }),
			ginlock.OnContended, ginlock.OnLimited, ginlock.OnUnavailable, ginlock.OnBadKey, ginlock.OnMisconfigured, ginlock.OnClientGone)
	},
}

func buildGin(t testing.TB, client *core.Client, routes ...conformance.Route) http.Handler {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.Use(gin.RecoveryWithWriter(io.Discard)) // the panic scenario panics on purpose
	for _, rt := range routes {
		lock := ginlock.New(client, ginOptions.options(t, rt)...)
		h := rt.Handler
		final := func(c *gin.Context) {
			l, ok := ginlock.Lease(c)
			h(c.Writer, c.Request, l, ok)
		}
		if rt.Group != "" {
			e.Group(rt.Group, lock).Handle(rt.Method, rt.Path, final)
			continue
		}
		e.Handle(rt.Method, rt.Path, ginChain(rt, lock, final)...)
	}
	return e
}
