package echolock

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
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
	gc, err := config.guardConfig()
	if err != nil {
		return nil, err
	}
	p, err := guard.New(gc)
	if err != nil {
		return nil, err
	}
	m := &lockMiddleware{cfg: config, p: p, respond: config.responders()}
	if newHook != nil {
		newHook(m)
	}
	return m.wrap, nil
}

// newHook lets this package's tests reach the middleware's route table.
var newHook func(*lockMiddleware)

// reader reads echo v4's request for the key parts of package guard. echo
// routes on the raw path when the request's path has escapes of its own
// (URL.RawPath set) and hands its parameters over still escaped: they are
// decoded once by guard.ParamValue.
type reader struct{}

func (reader) Param(c echo.Context, name string) (string, bool, bool) {
	for i, n := range c.ParamNames() {
		if n == name {
			if vs := c.ParamValues(); i < len(vs) {
				return vs[i], c.Request().URL.RawPath != "", true
			}
			return "", false, true
		}
	}
	return "", false, false
}

func (reader) Route(c echo.Context) (string, []string) { return c.Path(), c.ParamNames() }
func (reader) Request(c echo.Context) *http.Request    { return c.Request() }

type lockMiddleware struct {
	cfg     Config
	p       *guard.Policy[echo.Context]
	respond guard.Responders[echo.Context]
	routes  routeTable
}

// wrap puts the lock in front of next. echo v4 applies a route's
// middleware on every request, so wrap runs per request: it allocates
// only its closure.
func (m *lockMiddleware) wrap(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req, name := c.Request(), c.Path()
		if guard.Preflight(req.Method, req.Header) || !m.routes.routed(c, name) || (m.cfg.Skipper != nil && m.cfg.Skipper(c)) {
			return next(c)
		}
		h := m.p.Acquire(req.Context(), c, name, req.Method)
		if !h.OK() {
			return m.refuse(c, h)
		}
		defer m.release(c, h)
		defer c.SetRequest(req)
		c.SetRequest(req.WithContext(h.Ctx))
		h.SetToken(c.Response().Header(), m.cfg.TokenHeader)
		return next(c)
	}
}

// release ends h's hold once the handler returned, and tells
// ReleaseErrorHandler (default: c.Logger()) of a lost lease or a failed
// release.
func (m *lockMiddleware) release(c echo.Context, h *guard.Hold) {
	err := h.Release()
	switch {
	case err == nil:
	case m.cfg.ReleaseErrorHandler != nil:
		m.cfg.ReleaseErrorHandler(c, err)
	default:
		c.Logger().Error(err)
	}
}

// refuse returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does. The returned *echo.HTTPError's Message
// is the problem document (guard.Problem) and the response's headers
// (guard.Answer.SetHeaders: Content-Type application/problem+json among
// them) are set beforehand, so echo's default error handler, which keeps a
// Content-Type already set, answers RFC 9457 problem+json; a custom handler
// gets the document and the cause (Internal).
func (m *lockMiddleware) refuse(c echo.Context, h *guard.Hold) error {
	a, w := m.p.Answer(h), c.Response()
	if ok, err := m.respond.Respond(c, h, a, w.Header()); ok {
		return err
	}
	if a.Problem == nil {
		w.Status = a.Status // nobody to answer: record 499 for the access log
		return nil
	}
	a.SetHeaders(w.Header())
	return &echo.HTTPError{Code: a.Status, Message: *a.Problem, Internal: h.Err}
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, CORS preflight, fail-open).
func Lease(c echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
