package builders

import (
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Stdlib serves routes with net/http's ServeMux and httplock.
var Stdlib = conformance.Adapter{Name: "net/http", Build: buildStdlib, Idempotent: httpIdempotentErr}

// Chi serves routes with chi and httplock, the lock wrapping each route's
// handler (registered with Method, inside Route for a Group).
var Chi = ChiWith("chi")

var httpIdem = idemSet[httplock.IdempotencyOption]{
	header: httplock.IdempotencyHeader, required: httplock.IdempotencyRequired, storeEvery: httplock.IdempotencyStoreEveryAnswer,
	failOpen: httplock.IdempotencyFailOpen, methods: httplock.IdempotencyMethods, replayHeaders: httplock.IdempotencyReplayHeaders,
	scope:   scopeParts(httpOptions.parts, httplock.IdempotencyScope),
	maxBody: httplock.IdempotencyMaxBody, maxAnswer: httplock.IdempotencyMaxAnswer, retention: httplock.IdempotencyRetention,
	wait: httplock.IdempotencyWait, ttl: httplock.IdempotencyTTL, maxHold: httplock.IdempotencyMaxHold,
}

func httpIdempotent(client *core.Client, x conformance.Idempotency) (func(http.Handler) http.Handler, error) {
	return idempotent(httpIdem, x, func(opts ...httplock.IdempotencyOption) func(http.Handler) http.Handler {
		return httplock.Idempotent(client, opts...)
	})
}

func httpIdempotentErr(client *core.Client, x conformance.Idempotency) error {
	_, err := httpIdempotent(client, x)
	return err
}

var httpOptions = optionSet[httplock.Option, httplock.Part]{
	key: httplock.Key, keyFromRoute: httplock.KeyFromRoute, wait: httplock.Wait, ttl: httplock.TTL, maxHold: httplock.MaxHold,
	noWait: httplock.NoWait, failOpen: httplock.FailOpen, tokenHeader: httplock.TokenHeader, limit: httplock.Limit,
	byMethod: httplock.ReadWrite, readSide: httplock.ReadSide, writeSide: httplock.WriteSide, acquireOptions: httplock.AcquireOptions,
	parts: map[string]func(string) httplock.Part{"const": httplock.Const, "param": httplock.Param, "header": httplock.Header, "query": httplock.Query, "cookie": httplock.Cookie},
	releaseError: func(f func(error)) httplock.Option {
		return httplock.OnReleaseError(func(_ *http.Request, err error) { f(err) })
	},
	nilResponders: func() []httplock.Option {
		return customThenNil(httplock.Responder(func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusTeapot) }),
			httplock.OnContended, httplock.OnLimited, httplock.OnUnavailable, httplock.OnBadKey, httplock.OnMisconfigured, httplock.OnClientGone)
	},
}

// httplockOf builds the lock middleware of rt and the handler behind it,
// with rt's CORS middleware, cors, in its place.
func httplockOf(t testing.TB, client *core.Client, rt conformance.Route, cors func(http.Handler) http.Handler) http.Handler {
	h := rt.Handler
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := httplock.Lease(r)
		h(w, r, l, ok)
	})
	var route http.Handler = final
	if rt.Locked() {
		route = httpCORS(rt, cors, httplock.New(client, httpOptions.options(t, rt)...), final)
	}
	if rt.Idempotency != nil {
		once, err := httpIdempotent(client, *rt.Idempotency)
		if err != nil {
			t.Fatalf("route %s: %v", rt.Path, err)
		}
		route = once(route)
	}
	return route
}

func buildStdlib(t testing.TB, client *core.Client, routes ...conformance.Route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		// ServeMux has no groups: the lock wraps each route, after routing.
		mux.Handle(rt.Method+" "+rt.Group+conformance.BracePath(rt.Path), httplockOf(t, client, rt, rsCORS))
	}
	return recoverer(mux)
}

// ChiWith is Chi with path middleware in front of the router (r.Use):
// chi's CleanPath, URLFormat, StripSlashes rewrite the path chi routes on,
// not the request's URL.
func ChiWith(name string, mws ...func(http.Handler) http.Handler) conformance.Adapter {
	return conformance.Adapter{Name: name, Build: func(t testing.TB, client *core.Client, routes ...conformance.Route) http.Handler {
		return buildChi(t, client, routes, mws...)
	}, Idempotent: httpIdempotentErr}
}

func buildChi(t testing.TB, client *core.Client, routes []conformance.Route, mws ...func(http.Handler) http.Handler) http.Handler {
	r := chi.NewRouter()
	r.Use(mws...)
	for _, rt := range routes {
		lock := httplockOf(t, client, rt, chiCORS)
		if rt.Group != "" {
			r.Route(rt.Group, func(g chi.Router) { g.Method(rt.Method, conformance.BracePath(rt.Path), lock) })
			continue
		}
		r.Method(rt.Method, conformance.BracePath(rt.Path), lock)
	}
	return recoverer(r)
}
