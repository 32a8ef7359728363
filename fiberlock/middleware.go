package fiberlock

import (
	"log/slog"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// New returns the lock middleware. It panics, as fiber's own middleware
// does on a bad configuration, when client is nil, when there is no key
// source (or more than one: Key and KeyFromRoute are alternatives), and on
// option values the engine would reject on every request
// (guard.Config.Check, the same rules in every lockkit adapter).
func New(client *core.Client, opts ...Option) fiber.Handler {
	cfg := config{respond: guard.Responders[fiber.Ctx]{}, logger: slog.Default()}
	cfg.guard.Client = client
	for _, o := range opts {
		o(&cfg)
	}
	cfg.guard.Misconfigured = func(_ fiber.Ctx, route string, err error) {
		cfg.logger.Error("fiberlock: the route's lock is misconfigured: every request is answered 500", "route", route, "error", err)
	}
	p, err := guard.New(cfg.guard)
	if err != nil {
		panic("fiberlock: New: " + err.Error())
	}
	m := &middleware{cfg: cfg, p: p}
	return m.handle
}

type middleware struct {
	cfg config
	p   *guard.Policy[fiber.Ctx]
}

func (m *middleware) handle(c fiber.Ctx) error {
	if m.cfg.next != nil && m.cfg.next(c) {
		return c.Next() // skipped, the server's choice: nothing to lock
	}
	ctx := c.Context()
	h := m.p.Acquire(ctx, c, c.FullPath(), c.Method())
	if !h.OK() {
		return m.stop(c, h)
	}
	defer func() {
		c.SetContext(ctx)
		if err := h.Release(); err != nil {
			if m.cfg.onRelease != nil {
				m.cfg.onRelease(c, err)
			} else {
				m.cfg.logger.Error("fiberlock: lock release", "key", h.Key, "error", err)
			}
		}
	}()
	c.SetContext(h.Ctx)
	h.SetToken(c, m.cfg.tokenHdr)
	return c.Next()
}

// stop answers a request that may not run: its Responder's answer, or the
// default one, written to fiber's response.
func (m *middleware) stop(c fiber.Ctx, h *guard.Hold) error {
	a := m.p.Answer(h)
	if answered, err := m.cfg.respond.Respond(c, h, a, c); answered {
		return err
	}
	return answer(c, a)
}

// answer writes a, a default answer, to fiber's response.
func answer(c fiber.Ctx, a guard.Answer) error {
	c.Status(a.Status) // recorded; sent with the problem, if any
	if a.Problem == nil {
		return nil // the request's context was cancelled: nobody to answer
	}
	a.SetHeaders(c)
	return c.Send(a.Body())
}

// Lease returns the lease the request holds: false when the middleware did
// not lock this request (skipped, fail-open) or outside its handlers.
func Lease(c fiber.Ctx) (*core.Lease, bool) {
	if c == nil {
		return nil, false
	}
	return core.LeaseFromContext(c.Context())
}
