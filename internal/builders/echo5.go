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
var Echo5 = conformance.Adapter{Name: "echo5", Build: buildEcho5}

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
		mw := echo5lock.NewWithConfig(echo5lock.Config{
			Client: client, KeyParts: keyParts, Keys: keys, KeyFromRoute: fromRoute, ReleaseErrorHandler: onRelease,
			Wait: rt.Wait, NoWait: rt.NoWait, TTL: rt.TTL, MaxHold: rt.MaxHold, FailOpen: rt.FailOpen,
			TokenHeader: rt.TokenHeader, Limit: rt.Limit, ReadWrite: rwNames[rt.RW], AcquireOptions: rt.AcquireOptions,
		})
		handle := func(c *echo5.Context) error {
			l, ok := echo5lock.Lease(c)
			rt.Handler(c.Response(), c.Request(), l, ok)
			return nil
		}
		switch rt.Group {
		case "":
			e.Add(rt.Method, rt.Path, handle, echo5Chain(rt, mw)...)
		default:
			e.Group(rt.Group, mw).Add(rt.Method, rt.Path, handle)
		}
	}
	return e
}
