package builders

import (
	"net/http"
	"testing"

	echo5 "github.com/labstack/echo/v5"
	echo5mw "github.com/labstack/echo/v5/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echo5lock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Echo5 serves routes with echo v5 (Recover in front) and echo5lock.
var Echo5 = conformance.Adapter{Name: "echo5", Build: buildEcho5, Idempotent: func(client *core.Client, x conformance.Idempotency) error {
	_, err := echo5Idempotent(client, x)
	return err
}}

var echo5Idem = idemSet[echo5lock.IdempotencyOption]{
	header: echo5lock.IdempotencyHeader, required: echo5lock.IdempotencyRequired, storeEvery: echo5lock.IdempotencyStoreEveryAnswer,
	failOpen: echo5lock.IdempotencyFailOpen, methods: echo5lock.IdempotencyMethods, replayHeaders: echo5lock.IdempotencyReplayHeaders,
	scope:   func(spec string) (echo5lock.IdempotencyOption, error) { return echo5lock.IdempotencyScope(spec), nil },
	maxBody: echo5lock.IdempotencyMaxBody, maxAnswer: echo5lock.IdempotencyMaxAnswer, retention: echo5lock.IdempotencyRetention,
	wait: echo5lock.IdempotencyWait, ttl: echo5lock.IdempotencyTTL, maxHold: echo5lock.IdempotencyMaxHold,
}

func echo5Idempotent(client *core.Client, x conformance.Idempotency) (echo5.MiddlewareFunc, error) {
	return idempotent(echo5Idem, x, func(opts ...echo5lock.IdempotencyOption) echo5.MiddlewareFunc {
		return echo5lock.Idempotent(client, opts...)
	})
}

func buildEcho5(t testing.TB, client *core.Client, routes ...conformance.Route) http.Handler {
	e := echo5.New()
	recoverMW, err := echo5mw.RecoverConfig{DisablePrintStack: true}.ToMiddleware()
	if err != nil {
		t.Fatal(err)
	}
	e.Use(recoverMW)
	for _, rt := range routes {
		keyParts, keys, fromRoute := keyFields(rt)
		var onRelease func(*echo5.Context, error)
		if f := rt.ReleaseError; f != nil {
			onRelease = func(_ *echo5.Context, err error) { f(err) }
		}
		handle := func(c *echo5.Context) error {
			l, ok := echo5lock.Lease(c)
			rt.Handler(c.Response(), c.Request(), l, ok)
			return nil
		}
		var chain []echo5.MiddlewareFunc
		if rt.Idempotency != nil {
			once, err := echo5Idempotent(client, *rt.Idempotency)
			if err != nil {
				t.Fatalf("route %s: %v", rt.Path, err)
			}
			chain = append(chain, once)
		}
		if !rt.Locked() {
			e.Add(rt.Method, rt.Path, handle, chain...)
			continue
		}
		mw := echo5lock.NewWithConfig(echo5lock.Config{
			Client: client, KeyParts: keyParts, Keys: keys, KeyFromRoute: fromRoute, ReleaseErrorHandler: onRelease,
			Wait: rt.Wait, NoWait: rt.NoWait, TTL: rt.TTL, MaxHold: rt.MaxHold, FailOpen: rt.FailOpen,
			TokenHeader: rt.TokenHeader, Limit: rt.Limit, ReadWrite: rwNames[rt.RW], AcquireOptions: rt.AcquireOptions,
		})
		switch rt.Group {
		case "":
			e.Add(rt.Method, rt.Path, handle, append(chain, echo5Chain(rt, mw)...)...)
		default:
			e.Group(rt.Group, mw).Add(rt.Method, rt.Path, handle)
		}
	}
	return e
}
