package echolock

import (
	"github.com/labstack/echo/v4"

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
// configuration (echo's norm), ToMiddleware returns the error instead.
func NewWithConfig(config Config) echo.MiddlewareFunc {
	mw, err := config.ToMiddleware()
	if err != nil {
		panic("echolock: " + err.Error())
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
	if newHook != nil {
		newHook(m)
	}
	return m.wrap, nil
}

// newHook lets this package's tests reach the middleware's route table.
var newHook func(*lockMiddleware)

// reader reads echo v4's request. echo routes on the raw path when the
// request's path has escapes of its own (URL.RawPath set) and hands its
// parameters over still escaped: they are decoded once by keyspec.
var reader = keyspec.Reader[echo.Context]{
	Param: func(c echo.Context, name string) (string, bool, bool) {
		escaped := c.Request().URL.RawPath != ""
		for i, n := range c.ParamNames() {
			if n == name {
				if vs := c.ParamValues(); i < len(vs) {
					return vs[i], escaped, true
				}
				return "", false, true
			}
		}
		return "", false, false
	},
	Header: func(c echo.Context, name string) string { return c.Request().Header.Get(name) },
	Query:  func(c echo.Context, name string) string { return c.QueryParam(name) },
	Cookie: func(c echo.Context, name string) string {
		ck, err := c.Cookie(name)
		if err != nil {
			return ""
		}
		return ck.Value
	},
}

type lockMiddleware struct {
	cfg    Config
	acq    adapt.Config
	keys   []adapt.KeyFunc[echo.Context]
	routes routeTable
}

func (m *lockMiddleware) wrap(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		name := c.Path()
		if adapt.Preflight(req.Method, req.Header) || !m.routes.routed(c, name) || (m.cfg.Skipper != nil && m.cfg.Skipper(c)) {
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

func (m *lockMiddleware) releaseError(c echo.Context, err error) {
	if m.cfg.ReleaseErrorHandler != nil {
		m.cfg.ReleaseErrorHandler(c, err)
		return
	}
	c.Logger().Error(err)
}

// stop returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does. The returned *echo.HTTPError's Message
// is the problem document (httplock.Problem) and the response's
// Content-Type is set to application/problem+json beforehand, so echo's
// default error handler, which keeps a Content-Type already set, answers
// RFC 9457 problem+json; a custom handler gets the document and the cause
// (Internal).
func (m *lockMiddleware) stop(c echo.Context, key string, o core.Outcome, cause error) error {
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
		c.Response().Status = a.Status // nobody to answer: record 499 for the access log
		return nil
	}
	c.Response().Header().Set("Content-Type", httplock.ProblemContentType) // Retry-After is set above
	return &echo.HTTPError{Code: a.Status, Message: *a.Problem, Internal: cause}
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, CORS preflight, fail-open).
func Lease(c echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
