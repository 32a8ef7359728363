package builders

import (
	"net/http"
	"testing"

	echo4 "github.com/labstack/echo/v4"
	echo4mw "github.com/labstack/echo/v4/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Echo serves routes with echo v4 (Recover in front) and echolock.
var Echo = EchoWith(echolock.Config.ToMiddleware)

// EchoWith is Echo with each route's middleware built by toMiddleware from
// its Config, so echolock's tests can build it through a constructor of
// their own that keeps the middleware.
func EchoWith(toMiddleware func(echolock.Config) (echo4.MiddlewareFunc, error)) conformance.Adapter {
	return conformance.Adapter{Name: "echo", Build: func(t testing.TB, client *core.Client, routes ...conformance.Route) http.Handler {
		return buildEcho(t, client, toMiddleware, routes)
	}, Idempotent: func(client *core.Client, x conformance.Idempotency) error {
		_, err := echoIdempotent(client, x)
		return err
	}}
}

var echoIdem = idemSet[echolock.IdempotencyOption]{
	header: echolock.IdempotencyHeader, required: echolock.IdempotencyRequired, storeEvery: echolock.IdempotencyStoreEveryAnswer,
	failOpen: echolock.IdempotencyFailOpen, methods: echolock.IdempotencyMethods, replayHeaders: echolock.IdempotencyReplayHeaders,
	scope:   func(spec string) (echolock.IdempotencyOption, error) { return echolock.IdempotencyScope(spec), nil },
	maxBody: echolock.IdempotencyMaxBody, maxAnswer: echolock.IdempotencyMaxAnswer, retention: echolock.IdempotencyRetention,
	wait: echolock.IdempotencyWait, ttl: echolock.IdempotencyTTL, maxHold: echolock.IdempotencyMaxHold,
}

func echoIdempotent(client *core.Client, x conformance.Idempotency) (echo4.MiddlewareFunc, error) {
	return idempotent(echoIdem, x, func(opts ...echolock.IdempotencyOption) echo4.MiddlewareFunc {
		return echolock.Idempotent(client, opts...)
	})
}

func buildEcho(t testing.TB, client *core.Client, toMiddleware func(echolock.Config) (echo4.MiddlewareFunc, error), routes []conformance.Route) http.Handler {
	e := echo4.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(echo4mw.RecoverWithConfig(echo4mw.RecoverConfig{DisablePrintStack: true}))
	for _, rt := range routes {
		cfg := echolock.Config{Client: client, Wait: rt.Wait, NoWait: rt.NoWait, TTL: rt.TTL, MaxHold: rt.MaxHold, FailOpen: rt.FailOpen,
			TokenHeader: rt.TokenHeader, Limit: rt.Limit, ReadWrite: rwNames[rt.RW], AcquireOptions: rt.AcquireOptions}
		cfg.KeyParts, cfg.Keys, cfg.KeyFromRoute = keyFields(rt)
		if f := rt.ReleaseError; f != nil {
			cfg.ReleaseErrorHandler = func(_ echo4.Context, err error) { f(err) }
		}
		h := rt.Handler
		final := func(c echo4.Context) error {
			l, ok := echolock.Lease(c)
			h(c.Response(), c.Request(), l, ok)
			return nil
		}
		var chain []echo4.MiddlewareFunc
		if rt.Idempotency != nil {
			once, err := echoIdempotent(client, *rt.Idempotency)
			if err != nil {
				t.Fatalf("route %s: %v", rt.Path, err)
			}
			chain = append(chain, once)
		}
		if !rt.Locked() {
			e.Add(rt.Method, rt.Path, final, chain...)
			continue
		}
		mw, err := toMiddleware(cfg)
		if err != nil {
			t.Fatalf("route %s: %v", rt.Path, err)
		}
		if rt.Group == "" {
			e.Add(rt.Method, rt.Path, final, append(chain, echoChain(rt, mw)...)...)
		} else {
			e.Group(rt.Group, mw).Add(rt.Method, rt.Path, final)
		}
	}
	return e
}
