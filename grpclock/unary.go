package grpclock

import (
	"context"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
)

// UnaryServerInterceptor returns an interceptor that runs each call holding
// the lock on its key: by default the request message's LockKey(), or what
// Key / KeyFromRoute say. The method without its leading slash
// ("orders.v1.Orders/PayOrder", rpckey.Name) is the lock's name
// (telemetry), never part of the key.
//
// The handler gets a context carrying the lease (core.LeaseFromContext),
// cancelled when the call ends or the lease is lost (context.Cause
// core.ErrLost). The lock is released, on a context detached from the call,
// when the handler returns or panics.
//
// With Idempotent, a call carrying an idempotency key runs once
// (IdempotentUnaryServerInterceptor) and takes the lock only when it runs.
//
// It panics on a nil client or a bad option value.
func UnaryServerInterceptor(client *core.Client, opts ...Option) grpc.UnaryServerInterceptor {
	c := newConfig(client, opts, false)
	lock := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		h := c.policy.Acquire(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod, Msg: req}, info.FullMethod)
		if !h.OK() {
			return nil, c.policy.Refuse(ctx, info.FullMethod, h, unaryPushback(ctx))
		}
		defer c.policy.Release(ctx, info.FullMethod, h)
		resp, err := handler(h.Ctx, req)
		if c.policy.EndedDuring(h, ctx, err) {
			return nil, c.policy.Ended(ctx, info.FullMethod, h, err, unaryPushback(ctx))
		}
		return resp, err
	}
	if c.idempotency == nil {
		return lock
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return c.idempotency.intercept(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return lock(ctx, req, info, handler)
		})
	}
}
