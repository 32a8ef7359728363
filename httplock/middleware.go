package httplock

import (
	"log/slog"
	"net/http"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// New returns net/http middleware that runs the handler it wraps under the
// lock on the request's key. Wrap each route's handler, after the mux has
// routed (path values and r.Pattern exist only then):
//
//	lockOrder := httplock.New(client, httplock.Key(httplock.Const("order"), httplock.Param("id")))
//	mux.Handle("POST /orders/{id}/pay", lockOrder(pay))
//	mux.Handle("POST /orders/{id}/refund", lockOrder(refund))
//
// With chi, add it per route with r.With(lockOrder).Post(...): chi's Use
// runs before routing. Wrapping a whole mux (lock(mux)) locks before
// anything is routed: a Param part then answers 500 on every request,
// and the telemetry name is empty; parts that need no routing (headers,
// query, cookies, Func) work, with every route sharing the key.
//
// New panics on a nil client, no key source, or option values the engine
// would reject on every request (the same rules as every lockkit adapter).
func New(client *core.Client, opts ...Option) func(http.Handler) http.Handler {
	cfg := config{respond: guard.Responders[exchange]{}, logger: slog.Default()}
	cfg.guard.Client = client
	for _, o := range opts {
		o(&cfg)
	}
	cfg.guard.Misconfigured = func(_ *http.Request, pattern string, err error) {
		cfg.logger.Error("httplock: the pattern's lock is misconfigured: every request is answered 500", "pattern", pattern, "error", err)
	}
	p, err := guard.New(cfg.guard)
	if err != nil {
		panic("httplock: New: " + err.Error())
	}
	if cfg.name == nil {
		cfg.name = func(r *http.Request) string { return r.Pattern }
	}
	return func(next http.Handler) http.Handler {
		return &middleware{cfg: &cfg, p: p, next: next}
	}
}

type middleware struct {
	cfg  *config
	p    *guard.Policy[*http.Request]
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.cfg.skipper != nil && m.cfg.skipper(r) {
		m.next.ServeHTTP(w, r) // skipped, the server's choice: nothing to lock
		return
	}
	h := m.p.Acquire(r.Context(), r, m.cfg.name(r), r.Method)
	if !h.OK() {
		m.stop(w, r, h)
		return
	}
	defer func() {
		if err := h.Release(); err != nil {
			if m.cfg.onRelease != nil {
				m.cfg.onRelease(r, err)
			} else {
				m.cfg.logger.Error("httplock: lock release", "key", h.Key, "error", err)
			}
		}
	}()
	h.SetToken(w.Header(), m.cfg.tokenHdr)
	r = r.WithContext(h.Ctx)
	r.Body = h.Body(r.Body) // MaxHold bounds a handler waiting on its client too
	m.next.ServeHTTP(h.Writer(w), r)
}

// stop answers a request that may not run.
func (m *middleware) stop(w http.ResponseWriter, r *http.Request, h *guard.Hold) {
	a := m.p.Answer(h)
	if answered, _ := m.cfg.respond.Respond(exchange{w, r}, h, a, w.Header()); !answered {
		a.Write(w) // nothing for a client that went away
	}
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, fail-open).
// It is the innermost lease (core.LeaseFromContext): on a route with
// Idempotent and no lock, the idempotency claim (Claim).
func Lease(r *http.Request) (*core.Lease, bool) {
	if r == nil {
		return nil, false
	}
	return core.LeaseFromContext(r.Context())
}
