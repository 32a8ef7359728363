package ginlock

import (
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// New returns the lock middleware. It panics, like gin-contrib middleware
// does on a bad configuration, when client is nil, when there is no key
// source (or more than one: Key and KeyFromRoute are alternatives), and on
// option values the engine would reject on every request (guard.Config.Check,
// the same rules in every lockkit adapter).
func New(client *core.Client, opts ...Option) gin.HandlerFunc {
	cfg := config{respond: guard.Responders[*gin.Context]{}, logger: slog.Default()}
	cfg.guard.Client = client
	for _, o := range opts {
		o(&cfg)
	}
	cfg.guard.Misconfigured = func(_ *gin.Context, route string, err error) {
		cfg.logger.Error("ginlock: the route's lock is misconfigured: every request is answered 500", "route", route, "error", err)
	}
	p, err := guard.New(cfg.guard)
	if err != nil {
		panic("ginlock: New: " + err.Error())
	}
	m := &middleware{cfg: cfg, p: p}
	return m.handle
}

type middleware struct {
	cfg config
	p   *guard.Policy[*gin.Context]
}

func (m *middleware) handle(c *gin.Context) {
	name := c.FullPath()
	if name == "" || (m.cfg.skipper != nil && m.cfg.skipper(c)) {
		c.Next() // no matched route, or skipped (the server's choice): nothing to lock
		return
	}
	req := c.Request
	h := m.p.Acquire(req.Context(), c, name, req.Method)
	if !h.OK() {
		m.stop(c, h)
		return
	}
	w := c.Writer
	defer func() {
		c.Request, c.Writer = req, w
		if err := h.Release(); err != nil {
			if m.cfg.onRelease != nil {
				m.cfg.onRelease(c, err)
			} else {
				_ = c.Error(err)
			}
		}
	}()
	c.Request = req.WithContext(h.Ctx)
	if h.BoundsIO() { // MaxHold bounds a handler waiting on its client too
		c.Request.Body = h.Body(req.Body)
		c.Writer = &holdWriter{ResponseWriter: w, h: h}
	}
	h.SetToken(c.Writer.Header(), m.cfg.tokenHdr)
	c.Next()
}

// stop answers a request that may not run and aborts the chain.
func (m *middleware) stop(c *gin.Context, h *guard.Hold) {
	_ = c.Error(h.Err)
	a := m.p.Answer(h)
	if answered, _ := m.cfg.respond.Respond(c, h, a, c.Writer.Header()); !answered {
		c.Status(a.Status) // recorded; sent with the problem, if any (none to a client that went away)
		a.Write(c.Writer)
	}
	c.Abort()
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, fail-open).
// It is the innermost lease (core.LeaseFromContext): on a route with
// Idempotent and no lock, the idempotency claim (Claim).
func Lease(c *gin.Context) (*core.Lease, bool) {
	if c == nil || c.Request == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request.Context())
}

// holdWriter is gin's answer writer under a hold with a MaxHold: each
// write is client I/O (guard.Hold.BeginIO), as guard.Hold.Writer makes a
// net/http one.
type holdWriter struct {
	gin.ResponseWriter
	h *guard.Hold
}

func (w *holdWriter) Write(p []byte) (int, error) {
	w.h.BeginIO()
	defer w.h.EndIO()
	return w.ResponseWriter.Write(p)
}

func (w *holdWriter) WriteString(s string) (int, error) {
	w.h.BeginIO()
	defer w.h.EndIO()
	return w.ResponseWriter.WriteString(s)
}

func (w *holdWriter) Flush() {
	w.h.BeginIO()
	defer w.h.EndIO()
	w.ResponseWriter.Flush()
}
