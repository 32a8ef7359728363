package guard

import "context"

// Handler is what an adapter does with one request's hold, for Serve: one
// value per route (or per middleware) implements it, so serving a request
// allocates no closure.
type Handler[R any] interface {
	// Refuse answers r, which may not run (h.OK() is false).
	Refuse(r R, h *Hold) error
	// Run runs r's handler on h.Ctx, the context bound to the lease.
	Run(r R, h *Hold) error
	// Released is told what Hold.Release returned, when it is not nil: a
	// lease lost while the handler ran, or a failed release.
	Released(r R, h *Hold, err error)
}

// Serve is one request through p: Acquire, then x.Refuse when the request
// may not run, else x.Run and the release (deferred, so a panicking
// handler releases too), told to x.Released when it has something to say.
func (p *Policy[R]) Serve(ctx context.Context, r R, name, method string, x Handler[R]) error {
	h := p.Acquire(ctx, r, name, method)
	if !h.OK() {
		return x.Refuse(r, h)
	}
	defer func() {
		if err := h.Release(); err != nil {
			x.Released(r, h, err)
		}
	}()
	return x.Run(r, h)
}
