package rpckey

import (
	"context"

	"github.com/lockkit/lockkit/guard"
)

// Policy is a checked Config (New): the guard.Policy that locks an RPC
// adapter's calls, with the answers every RPC adapter gives carried by the
// adapter's Wire. The adapter maps its framework's calls and streams onto
// it and decides nothing itself.
type Policy[R any] struct {
	g *guard.Policy[R]
	c Config[R]
}

// Acquire takes the lock of r, a call to procedure on ctx (the call's
// context), named for telemetry Name(procedure).
func (p *Policy[R]) Acquire(ctx context.Context, r R, procedure string) *guard.Hold {
	return p.g.Acquire(ctx, r, Name(procedure), "")
}

// Release ends h, a hold of a call to procedure, and tells OnRelease of a
// lost lease or a failed release.
func (p *Policy[R]) Release(ctx context.Context, procedure string, h *guard.Hold) {
	if err := h.Release(); err != nil && p.c.OnRelease != nil {
		p.c.OnRelease(ctx, procedure, err)
	}
}
