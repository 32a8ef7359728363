package echolock

import (
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
	return guard.Must("echolock", config.ToMiddleware)
}

// ToMiddleware checks the configuration and returns the middleware. Its
// errors match core.ErrInvalidOption.
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	m, err := config.build()
	if err != nil {
		return nil, err
	}
	return m.wrap, nil
}

// build is the middleware of config, before echo takes its wrap.
func (config Config) build() (*lockMiddleware, error) {
	g, err := guard.NewMiddleware(guard.MiddlewareConfig[echo.Context](config), reader{}, logger{})
	if err != nil {
		return nil, err
	}
	return &lockMiddleware{g: g}, nil
}

// reader reads echo v4's request for the key parts of package guard. echo
// routes on the raw path when the request's path has escapes of its own
// (URL.RawPath set) and hands its parameters over still escaped:
// guard.ParamValue decodes them.
type reader struct{}

func (reader) Param(c echo.Context, name string) (string, bool) {
	for i, n := range c.ParamNames() {
		if n == name {
			if vs := c.ParamValues(); i < len(vs) {
				return vs[i], true
			}
			return "", true
		}
	}
	return "", false
}

func (reader) Route(c echo.Context) (string, []string)   { return c.Path(), c.ParamNames() }
func (reader) Header(c echo.Context, name string) string { return c.Request().Header.Get(name) }
func (reader) HeaderValues(c echo.Context, name string) []string {
	return c.Request().Header.Values(name)
}
func (reader) Cookies(c echo.Context) []string { return c.Request().Header["Cookie"] }
func (reader) RawQuery(c echo.Context) string  { return c.Request().URL.RawQuery }

type lockMiddleware struct {
	g      *guard.Middleware[echo.Context]
	routes routeTable
}

// wrap puts the lock in front of next. echo v4 applies a route's
// middleware on every request, so wrap runs per request: it allocates
// only its closure.
func (m *lockMiddleware) wrap(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req, name := c.Request(), c.Path()
		if m.g.Skip(c, m.routes.routed(c, name)) {
			return next(c)
		}
		h := m.g.Acquire(req.Context(), c, name, req.Method)
		if !h.OK() {
			return m.refuse(c, h)
		}
		defer m.release(c, h)
		defer c.SetRequest(req)
		bound := req.WithContext(h.Ctx)
		bound.Body = h.Body(req.Body) // MaxHold bounds a handler waiting on its client too
		c.SetRequest(bound)
		if res := c.Response(); h.BoundsIO() {
			w := res.Writer
			res.Writer = h.Writer(w)
			defer func() { res.Writer = w }()
		}
		m.g.SetToken(c.Response().Header(), h)
		return next(c)
	}
}

// release ends h's hold once the handler returned.
func (m *lockMiddleware) release(c echo.Context, h *guard.Hold) {
	if err := h.Release(); err != nil {
		m.g.Released(c, err)
	}
}

// refuse returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does. The returned *echo.HTTPError's Message
// is the problem document (guard.Problem) and the response's headers
// (Content-Type application/problem+json among them) are set beforehand,
// so echo's default error handler, which keeps a Content-Type already set,
// answers RFC 9457 problem+json; a custom handler gets the document and
// the cause (Internal).
func (m *lockMiddleware) refuse(c echo.Context, h *guard.Hold) error {
	a, custom, err := m.g.Refuse(c, h, c.Response().Header())
	if custom {
		return err
	}
	return answerErr(c, a, h.Err)
}

// answerErr is a, the default answer to a request stopped for cause, as
// the error echo's HTTPErrorHandler answers, its headers already set on
// the response; nil, with 499 recorded, when nobody is left to answer.
func answerErr(c echo.Context, a guard.Answer, cause error) error {
	w := c.Response()
	if a.Problem == nil {
		w.Status = a.Status // nobody to answer: record 499 for the access log
		return nil
	}
	a.SetHeaders(w.Header())
	return &echo.HTTPError{Code: a.Status, Message: *a.Problem, Internal: cause}
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, fail-open).
func Lease(c echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
