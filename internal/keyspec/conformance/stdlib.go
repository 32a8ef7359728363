package conformance

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
)

// Stdlib serves routes with net/http's ServeMux and httplock.
var Stdlib = Adapter{Name: "net/http", Build: buildStdlib}

// Chi serves routes with chi and httplock (added per route with With).
var Chi = Adapter{Name: "chi", Build: buildChi}

var colonParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// bracePath turns "/orders/:id/pay" into "/orders/{id}/pay".
func bracePath(p string) string { return colonParam.ReplaceAllString(p, "{$1}") }

// httplockOf builds the lock middleware of rt and the handler behind it.
func httplockOf(t testing.TB, client *core.Client, rt Route) http.Handler {
	var opts []httplock.Option
	for _, spec := range rt.keySpecs() {
		opts = append(opts, httplock.Key(partsOfSpec(t, rt, spec, map[string]func(string) httplock.Part{
			"const": httplock.Const, "param": httplock.Param, "header": httplock.Header,
			"query": httplock.Query, "cookie": httplock.Cookie,
		})...))
	}
	opts = append(opts, httplock.Wait(rt.Wait), httplock.TTL(rt.TTL), httplock.MaxHold(rt.MaxHold))
	opts = append(opts, kindOptions(rt, httplock.Limit, httplock.ReadWrite, httplock.ReadSide, httplock.WriteSide)...)
	if rt.NoWait {
		opts = append(opts, httplock.NoWait())
	}
	if rt.FailOpen {
		opts = append(opts, httplock.FailOpen())
	}
	if rt.TokenHeader != "" {
		opts = append(opts, httplock.TokenHeader(rt.TokenHeader))
	}
	if f := rt.ReleaseError; f != nil {
		opts = append(opts, httplock.OnReleaseError(func(_ *http.Request, err error) { f(err) }))
	}
	h := rt.Handler
	var out http.Handler = httplock.New(client, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := httplock.Lease(r)
		h(w, r, l, ok)
	}))
	if d := rt.Deadline; d > 0 {
		inner := out
		out = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			inner.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	return out
}

func buildStdlib(t testing.TB, client *core.Client, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		// ServeMux has no groups: the lock wraps each route, after routing.
		mux.Handle(rt.Method+" "+rt.Group+bracePath(rt.Path), httplockOf(t, client, rt))
	}
	return recoverer(mux)
}

func buildChi(t testing.TB, client *core.Client, routes ...Route) http.Handler {
	r := chi.NewRouter()
	for _, rt := range routes {
		lock := httplockOf(t, client, rt)
		if rt.Group != "" {
			r.Route(rt.Group, func(g chi.Router) { g.Method(rt.Method, bracePath(rt.Path), lock) })
			continue
		}
		r.Method(rt.Method, bracePath(rt.Path), lock)
	}
	return recoverer(r)
}

// recoverer answers 500 to a panicking handler (as gin.Recovery and echo's
// Recover do), after the lock's deferred release ran.
func recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	})
}
