package echo5lock

import (
	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/adapt"
	"github.com/lockkit/lockkit/internal/keyspec"
)

// New returns the lock middleware keyed by the key spec keyParts, e.g.
// "const:order,param:id". It panics on a nil client or a bad spec.
func New(client *core.Client, keyParts string) echo.MiddlewareFunc {
	return NewWithConfig(Config{Client: client, KeyParts: keyParts})
}

// NewWithConfig returns the lock middleware; it panics on an invalid
// configuration, ToMiddleware returns the error instead.
func NewWithConfig(config Config) echo.MiddlewareFunc {
	mw, err := config.ToMiddleware()
	if err != nil {
		panic("echo5lock: " + err.Error())
	}
	return mw
}

// ToMiddleware checks the configuration and returns the middleware. Its
// errors match core.ErrInvalidOption.
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	m := &lockMiddleware{
		cfg: config,
		acq: adapt.Config{
			Client: config.Client, Wait: config.Wait, NoWait: config.NoWait, TTL: config.TTL,
			FailOpen: config.FailOpen, ReleaseTimeout: config.ReleaseTimeout, Options: config.AcquireOptions,
			Limit: config.Limit,
		},
	}
	keys, err := keyspec.KeySources(config.KeyParts, config.Keys, config.KeyFunc, reader)
	if err != nil {
		return nil, err
	}
	m.keys, m.acq.Keys = keys, len(keys)
	if m.acq.RW, err = adapt.ParseRW(config.ReadWrite); err != nil {
		return nil, err
	}
	if err := m.acq.Check(); err != nil {
		return nil, err
	}
	return m.wrap, nil
}

var reader = keyspec.Reader[*echo.Context]{
	Param: func(c *echo.Context, name string) (string, bool, bool) {
		v, ok := c.PathValues().Get(name)
		return v, ok && valuesEscaped(c), ok
	},
	Header: func(c *echo.Context, name string) string { return c.Request().Header.Get(name) },
	Query:  func(c *echo.Context, name string) string { return c.QueryParam(name) },
	Cookie: func(c *echo.Context, name string) string {
		ck, err := c.Cookie(name)
		if err != nil {
			return ""
		}
		return ck.Value
	},
}

type lockMiddleware struct {
	cfg  Config
	acq  adapt.Config
	keys []adapt.KeyFunc[*echo.Context]
}

func (m *lockMiddleware) wrap(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		req := c.Request()
		name := c.Path()
		if adapt.Preflight(req.Method, req.Header) || !routed(c, name) || (m.cfg.Skipper != nil && m.cfg.Skipper(c)) {
			return next(c)
		}
		g, key := adapt.AcquireRequest(&m.acq, req.Context(), c, m.keys, name, req.Method)
		if !g.OK() {
			return m.stop(c, key, g.Outcome, g.Err)
		}
		defer func() {
			c.SetRequest(req)
			if err := g.Release(); err != nil {
				m.releaseError(c, err)
			}
		}()
		c.SetRequest(req.WithContext(g.Ctx))
		if m.cfg.TokenHeader != "" && g.Lease != nil {
			c.Response().Header().Set(m.cfg.TokenHeader, g.TokenHeader())
		}
		return next(c)
	}
}

func (m *lockMiddleware) releaseError(c *echo.Context, err error) {
	if m.cfg.ReleaseErrorHandler != nil {
		m.cfg.ReleaseErrorHandler(c, err)
		return
	}
	c.Logger().Error("echo5lock: lock release", "error", err)
}

// routed reports whether the request matched a route of its own: echo v5
// gives a 405 the path of the route it nearly matched, and a group's Use
// sends unmatched paths through the group's middleware on a catch-all
// RouteNotFound route; neither is a route to lock. It reads the route the
// router matched, so it keeps no state.
func routed(c *echo.Context, path string) bool {
	if path == "" {
		return false
	}
	ri := c.RouteInfo()
	switch {
	case ri.Name == echo.NotFoundRouteName, ri.Name == echo.MethodNotAllowedRouteName, ri.Method == echo.RouteNotFound:
		return false
	}
	return true
}

// stop returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does, from the returned *Error.
func (m *lockMiddleware) stop(c *echo.Context, key string, o core.Outcome, cause error) error {
	a := httplock.AnswerFor(o, cause, m.cfg.RetryAfter)
	if a.RetryAfter != "" {
		c.Response().Header().Set(httplock.HeaderRetryAfter, a.RetryAfter)
	}
	switch {
	case o.NotAcquired() && m.cfg.DenyHandler != nil:
		return m.cfg.DenyHandler(c, key, cause)
	case !o.NotAcquired() && m.cfg.ErrorHandler != nil:
		return m.cfg.ErrorHandler(c, cause)
	case a.Problem == nil:
		if r, err := echo.UnwrapResponse(c.Response()); err == nil {
			r.Status = a.Status // nobody to answer: record 499 for the access log
		}
		return nil
	}
	c.Response().Header().Set("Content-Type", httplock.ProblemContentType) // Retry-After is set above
	return &Error{Problem: *a.Problem, Err: cause}
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, CORS preflight, fail-open).
func Lease(c *echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
