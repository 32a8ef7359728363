package httplock

import (
	"log/slog"
	"net/http"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
)

// New returns net/http middleware that runs the handler it wraps under the
// lock on the request's key. Wrap each route's handler, after the mux has
// routed (path values and r.Pattern exist only then):
//
//	lockOrder := httplock.New(client, httplock.Key(httplock.Const("order"), httplock.PathValue("id")))
//	mux.Handle("POST /orders/{id}/pay", lockOrder(pay))
//	mux.Handle("POST /orders/{id}/refund", lockOrder(refund))
//
// With chi, add it per route with r.With(lockOrder).Post(...): chi's Use
// runs before routing. Wrapping a whole mux (lock(mux)) locks before
// anything is routed: a PathValue part then answers 500 on every request,
// and the telemetry name is empty; parts that need no routing (headers,
// query, cookies, Func) work, with every route sharing the key.
//
// New panics on a nil client, no key source, or option values the engine
// would reject on every request (the same rules as every lockkit adapter).
func New(client *core.Client, opts ...Option) func(http.Handler) http.Handler {
	cfg := config{respond: map[core.Outcome]Responder{}}
	cfg.adapt.Client = client
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.keyOpts == 0:
		panic("httplock: New: no key source; pass httplock.Key(parts...) (e.g. Key(Const(\"order\"), PathValue(\"id\")))")
	case len(cfg.keys) < cfg.keyOpts:
		panic("httplock: New: httplock.Key() needs at least one part")
	}
	cfg.adapt.Keys = len(cfg.keys)
	if err := cfg.adapt.Check(); err != nil {
		panic("httplock: New: " + err.Error())
	}
	if cfg.name == nil {
		cfg.name = func(r *http.Request) string { return r.Pattern }
	}
	return func(next http.Handler) http.Handler {
		return &middleware{cfg: &cfg, next: next}
	}
}

type middleware struct {
	cfg  *config
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if adapt.Preflight(r.Method, r.Header) || (m.cfg.skipper != nil && m.cfg.skipper(r)) {
		m.next.ServeHTTP(w, r) // CORS preflight, or skipped: nothing to lock
		return
	}
	g, key := adapt.AcquireRequest(&m.cfg.adapt, r.Context(), r, m.cfg.keys, m.cfg.name(r), r.Method)
	if !g.OK() {
		m.stop(w, r, g.Outcome, g.Err)
		return
	}
	defer func() {
		if err := g.Release(); err != nil {
			if m.cfg.onRelease != nil {
				m.cfg.onRelease(r, err)
			} else {
				slog.Default().Error("httplock: lock release", "key", key, "error", err)
			}
		}
	}()
	if m.cfg.tokenHdr != "" && g.Lease != nil {
		w.Header().Set(m.cfg.tokenHdr, g.TokenHeader())
	}
	m.next.ServeHTTP(w, r.WithContext(g.Ctx))
}

// stop answers a request that may not run.
func (m *middleware) stop(w http.ResponseWriter, r *http.Request, o core.Outcome, err error) {
	a := AnswerFor(o, err, m.cfg.retryAfter)
	if f := m.cfg.respond[o]; f != nil {
		if a.RetryAfter != "" {
			w.Header().Set(HeaderRetryAfter, a.RetryAfter)
		}
		f(w, r, err)
		return
	}
	a.Write(w) // nothing for a client that went away
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, CORS preflight, fail-open).
func Lease(r *http.Request) (*core.Lease, bool) {
	if r == nil {
		return nil, false
	}
	return core.LeaseFromContext(r.Context())
}
