package echo5lock

import (
	"fmt"
	"net/http"

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
	mw, err := config.ToMiddleware()
	if err != nil {
		panic("echo5lock: " + err.Error())
	}
	return mw
}

// ToMiddleware checks the configuration and returns the middleware. Its
// errors match core.ErrInvalidOption.
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	if layoutErr != nil {
		// Path values could not be decoded exactly once: keys would split
		// by spelling.
		return nil, fmt.Errorf("cannot read echo's routing settings (this version of echo is not one echo5lock knows): %w", layoutErr)
	}
	gc, respond, err := config.guardConfig()
	if err != nil {
		return nil, err
	}
	p, err := guard.New(gc)
	if err != nil {
		return nil, err
	}
	return (&lockMiddleware{cfg: config, p: p, respond: respond}).wrap, nil
}

// reader reads echo v5's request for the key parts of package guard.
type reader struct{}

func (reader) Param(c *echo.Context, name string) (string, bool, bool) {
	v, ok := c.PathValues().Get(name)
	return v, ok && valuesEscaped(c), ok
}

func (reader) Route(c *echo.Context) (string, []string) {
	pv := c.PathValues()
	names := make([]string, len(pv))
	for i, p := range pv {
		names[i] = p.Name
	}
	return c.Path(), names
}

func (reader) Request(c *echo.Context) *http.Request { return c.Request() }

type lockMiddleware struct {
	cfg     Config
	p       *guard.Policy[*echo.Context]
	respond guard.Responders[*echo.Context]
}

// handler is the middleware in front of one route's handler, next.
type handler struct {
	*lockMiddleware
	next echo.HandlerFunc
}

func (m *lockMiddleware) wrap(next echo.HandlerFunc) echo.HandlerFunc {
	h := &handler{m, next}
	return func(c *echo.Context) error {
		req := c.Request()
		if guard.Preflight(req.Method, req.Header) || !routed(c) || (m.cfg.Skipper != nil && m.cfg.Skipper(c)) {
			return next(c)
		}
		return m.p.Serve(req.Context(), c, c.Path(), req.Method, h)
	}
}

func (h *handler) Run(c *echo.Context, hold *guard.Hold) error {
	req := c.Request()
	c.SetRequest(req.WithContext(hold.Ctx))
	defer c.SetRequest(req)
	hold.SetToken(c.Response().Header(), h.cfg.TokenHeader)
	return h.next(c)
}

func (h *handler) Released(c *echo.Context, _ *guard.Hold, err error) {
	if h.cfg.ReleaseErrorHandler == nil {
		c.Logger().Error("echo5lock: lock release", "error", err)
		return
	}
	h.cfg.ReleaseErrorHandler(c, err)
}

// Refuse returns the outcome of a request that may not run, never writing
// it: echo's HTTPErrorHandler does, from the returned *Error, with the
// answer's headers (guard.Answer.SetHeaders) already set on the response.
func (h *handler) Refuse(c *echo.Context, hold *guard.Hold) error {
	a := h.p.Answer(hold)
	hdr := c.Response().Header()
	if ok, err := h.respond.Respond(c, hold, a, hdr); ok {
		return err
	}
	if a.Problem != nil {
		a.SetHeaders(hdr)
		return &Error{Problem: *a.Problem, Err: hold.Err}
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
// not lock this request (skipped, unmatched route, CORS preflight, fail-open).
func Lease(c *echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Request().Context())
}
