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
var Gin = conformance.Adapter{Name: "gin", Build: buildGin, Idempotent: func(client *core.Client, x conformance.Idempotency) error {
	_, err := ginIdempotent(client, x)
	return err
}}

var ginIdem = idemSet[ginlock.IdempotencyOption]{
	header: ginlock.IdempotencyHeader, required: ginlock.IdempotencyRequired, storeEvery: ginlock.IdempotencyStoreEveryAnswer,
	failOpen: ginlock.IdempotencyFailOpen, methods: ginlock.IdempotencyMethods, replayHeaders: ginlock.IdempotencyReplayHeaders,
	scope:   scopeParts(ginOptions.parts, ginlock.IdempotencyScope),
	maxBody: ginlock.IdempotencyMaxBody, maxAnswer: ginlock.IdempotencyMaxAnswer, retention: ginlock.IdempotencyRetention,
	wait: ginlock.IdempotencyWait, ttl: ginlock.IdempotencyTTL, maxHold: ginlock.IdempotencyMaxHold,
}

func ginIdempotent(client *core.Client, x conformance.Idempotency) (gin.HandlerFunc, error) {
	return idempotent(ginIdem, x, func(opts ...ginlock.IdempotencyOption) gin.HandlerFunc { return ginlock.Idempotent(client, opts...) })
}

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
		h := rt.Handler
		final := func(c *gin.Context) {
			l, ok := ginlock.Lease(c)
			h(c.Writer, c.Request, l, ok)
		}
		var chain []gin.HandlerFunc
		if rt.Idempotency != nil {
			once, err := ginIdempotent(client, *rt.Idempotency)
			if err != nil {
				t.Fatalf("route %s: %v", rt.Path, err)
			}
			chain = append(chain, once)
		}
		if !rt.Locked() {
			e.Handle(rt.Method, rt.Path, append(chain, final)...)
			continue
		}
		lock := ginlock.New(client, ginOptions.options(t, rt)...)
		if rt.Group != "" {
			e.Group(rt.Group, lock).Handle(rt.Method, rt.Path, final)
			continue
		}
		e.Handle(rt.Method, rt.Path, append(chain, ginChain(rt, lock, final)...)...)
	}
	return e
}
