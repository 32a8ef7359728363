package ginlock

import (
	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/adapt"
)

// New returns the lock middleware. It panics, like gin-contrib middleware
// does on a bad configuration, when client is nil, when there is no key
// source (or more than one: Key and KeyFromRoute are alternatives), and on
// option values the engine would reject on every request.
func New(client *core.Client, opts ...Option) gin.HandlerFunc {
	cfg := config{respond: map[core.Outcome]Responder{}}
	cfg.adapt.Client = client
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.keyOpts == 0:
		panic("ginlock: New: no key source; pass ginlock.Key(parts...) (e.g. Key(Const(\"order\"), Param(\"id\"))) or ginlock.KeyFromRoute()")
	case cfg.fromRoute && cfg.keyOpts > 1:
		panic("ginlock: New: more than one key source; pass ginlock.Key(...) (once per key) or ginlock.KeyFromRoute()")
	case len(cfg.keys) < cfg.keyOpts:
		panic("ginlock: New: ginlock.Key() needs at least one part")
	}
	cfg.adapt.Keys = len(cfg.keys)
	if err := cfg.adapt.Check(); err != nil {
		panic("ginlock: New: " + err.Error())
	}
	m := &middleware{cfg: cfg}
	return m.handle
}

type middleware struct{ cfg config }

func (m *middleware) handle(c *gin.Context) {
	name := c.FullPath()
	if name == "" || adapt.Preflight(c.Request.Method, c.Request.Header) || (m.cfg.skipper != nil && m.cfg.skipper(c)) {
		c.Next() // no matched route, CORS preflight, or skipped: nothing to lock
		return
	}
	req := c.Request
	g, _ := adapt.AcquireRequest(&m.cfg.adapt, req.Context(), c, m.cfg.keys, name, req.Method)
	if !g.OK() {
		m.stop(c, g.Outcome, g.Err)
		return
	}
	defer func() {
		c.Request = req
		if err := g.Release(); err != nil {
			if m.cfg.onRelease != nil {
				m.cfg.onRelease(c, err)
			} else {
				_ = c.Error(err)
			}
		}
	}()
	c.Request = req.WithContext(g.Ctx)
	if m.cfg.tokenHdr != "" && g.Lease != nil {
		c.Header(m.cfg.tokenHdr, g.TokenHeader())
	}
	c.Next()
}

// stop answers a request that may not run and aborts the chain.
func (m *middleware) stop(c *gin.Context, o core.Outcome, err error) {
	_ = c.Error(err)
	a := httplock.AnswerFor(o, err, m.cfg.retryAfter)
	if a.RetryAfter != "" {
		c.Header(httplock.HeaderRetryAfter, a.RetryAfter)
	}
	switch f := m.cfg.respond[o]; {
	case f != nil:
		f(c, err)
	case a.Problem == nil:
		c.Status(a.Status) // the client is gone: record the status, write no body
	default:
		c.Data(a.Status, httplock.ProblemContentType, a.Problem.JSON())
	}
	c.Abort()
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, CORS preflight, fail-open).
func Lease(c *gin.Context) (*core.Lease, bool) {
	if c == nil || c.Request == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request.Context())
}
