package echo5lock

import (
	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// New returns the lock middleware keyed by the key spec keyParts, e.g.
// "const:order,param:id". It panics on a nil client or a bad spec.
func New(client *core.Client, keyParts string) echo.MiddlewareFunc {
	return NewWithConfig(Config{Client: client, KeyParts: keyParts})
}

// NewWithConfig returns the lock middleware; it panics on an invalid
// configuration, ToMiddleware returns the error instead.
func NewWithConfig(config Config) echo.MiddlewareFunc {
	return guard.Must("echo5lock", config.ToMiddleware)
}

// ToMiddleware checks the configuration and returns the middleware. Its
// errors match core.ErrInvalidOption.
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	m, err := guard.NewMiddleware(guard.MiddlewareConfig[*echo.Context](config), reader{}, logger{})
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc { return (&handler{m, next}).serve }, nil
}

// reader reads echo v5's request for the key parts of package guard.
type reader struct{}

func (reader) Param(c *echo.Context, name string) (string, bool) { return c.PathValues().Get(name) }

func (reader) Route(c *echo.Context) (string, []string) {
	pv := c.PathValues()
	names := make([]string, len(pv))
	for i, p := range pv {
		names[i] = p.Name
	}
	return c.Path(), names
}

func (reader) Header(c *echo.Context, name string) string { return c.Request().Header.Get(name) }
func (reader) HeaderValues(c *echo.Context, name string) []string {
	return c.Request().Header.Values(name)
}
func (reader) Cookies(c *echo.Context) []string { return c.Request().Header["Cookie"] }
func (reader) RawQuery(c *echo.Context) string  { return c.Request().URL.RawQuery }

// handler is the middleware in front of one route's handler, next: echo v5
// applies a route's middleware once, when the route is added, so serving a
// request allocates no closure.
type handler struct {
	m    *guard.Middleware[*echo.Context]
	next echo.HandlerFunc
}

func (h *handler) serve(c *echo.Context) error {
	if h.m.Skip(c, routed(c)) {
		return h.next(c)
	}
	req := c.Request()
	return h.m.Serve(req.Context(), c, c.Path(), req.Method, h)
}

func (h *handler) Run(c *echo.Context, hold *guard.Hold) error {
	req := c.Request()
	bound := req.WithContext(hold.Ctx)
	bound.Body = hold.Body(req.Body) // MaxHold bounds a handler waiting on its client too
	c.SetRequest(bound)
	defer c.SetRequest(req)
	if res := c.Response(); hold.BoundsIO() {
		c.SetResponse(hold.Writer(res))
		defer c.SetResponse(res)
	}
	h.m.SetToken(c.Response().Header(), hold)
	return h.next(c)
}

func (h *handler) Released(c *echo.Context, _ *guard.Hold, err error) { h.m.Released(c, err) }

// Refuse returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does, from the returned *Error, with the
// answer's headers already set on the response.
func (h *handler) Refuse(c *echo.Context, hold *guard.Hold) error {
	a, custom, err := h.m.Refuse(c, hold, c.Response().Header())
	if custom {
		return err
	}
	return answerErr(c, a, hold.Err)
}

// answerErr is a, the default answer to a request stopped for cause, as
// the *Error echo's HTTPErrorHandler answers, its headers already set on
// the response; nil, with 499 recorded, when nobody is left to answer.
func answerErr(c *echo.Context, a guard.Answer, cause error) error {
	if a.Problem != nil {
		a.SetHeaders(c.Response().Header())
		return &Error{Problem: *a.Problem, Err: cause}
	}
	if r, err := echo.UnwrapResponse(c.Response()); err == nil {
		r.Status = a.Status // nobody to answer: record 499 for the access log
	}
	return nil
}

// routed reports whether the request matched a route of its own: echo v5
// gives a 405 the path of the route it nearly matched, and a group's Use
// sends unmatched paths through the group's middleware on a catch-all
// RouteNotFound route; neither is a route to lock. It reads the route the
// router matched, so it keeps no state.
func routed(c *echo.Context) bool {
	if c.Path() == "" {
		return false
	}
	ri := c.RouteInfo()
	switch {
	case ri.Name == echo.NotFoundRouteName, ri.Name == echo.MethodNotAllowedRouteName, ri.Method == echo.RouteNotFound:
		return false
	}
	return true
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, unmatched route, fail-open).
func Lease(c *echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
