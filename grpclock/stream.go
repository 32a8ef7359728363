package grpclock

import (
	"context"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// StreamServerInterceptor returns an interceptor that holds a lock for the
// whole life of each stream: from before the handler runs (key from metadata,
// Const, Func or KeyFromRoute) or from the handler's first RecvMsg
// (FromFirstMessage) until the handler returns.
//
// A stream keyed up front that cannot get the lock never reaches its handler.
// A stream keyed by its first message gets the refusal from that RecvMsg
// (and from every later RecvMsg and SendMsg), its context is cancelled, and
// the refusal (Aborted, Unavailable, ...) is the stream's final status
// whatever the handler returns. The handler's context is cancelled with
// cause core.ErrLost if the lease is lost.
//
// It panics on a nil client, a bad option value, Idempotent (a stream's
// answer is no message a record can replay), or no key source: a stream
// has no message before its handler runs, so there is no default.
func StreamServerInterceptor(client *core.Client, opts ...Option) grpc.StreamServerInterceptor {
	c := newConfig(client, opts, true)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if c.rpc.FirstMessage {
			return c.serveFirstMessage(srv, ss, info, handler)
		}
		ctx := ss.Context()
		h := c.policy.Acquire(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod}, info.FullMethod)
		if !h.OK() {
			return c.policy.Refuse(ctx, info.FullMethod, h, streamPushback(ss))
		}
		defer c.policy.Release(ctx, info.FullMethod, h)
		err := handler(srv, &boundStream{ServerStream: ss, ctx: h.Ctx, hold: h, c: c, method: info.FullMethod})
		return c.policy.Result(ctx, info.FullMethod, h, err, streamPushback(ss))
	}
}

// boundStream hands the handler the lease-bound context, and tells the hold
// when the handler waits on its client, to receive or to send (MaxHold
// frees the lock of a stream waiting so).
type boundStream struct {
	grpc.ServerStream
	ctx    context.Context
	hold   *guard.Hold
	c      *config
	method string
}

func (s *boundStream) Context() context.Context { return s.ctx }

// RecvMsg receives m while the hold knows the handler idle (MaxHold frees
// an idle stream's lock). Past the hold's MaxHold it returns the call's
// answer, Aborted with a retry hint, as to a handler that failed for it.
func (s *boundStream) RecvMsg(m any) error {
	return s.c.policy.Receive(s.ServerStream.Context(), s.method, s.hold,
		func() error { return s.ServerStream.RecvMsg(m) }, streamPushback(s.ServerStream))
}

// SendMsg sends m while the hold knows the handler waiting on its client
// (guard.Hold.Send): a client that stops reading frees the lock at MaxHold.
func (s *boundStream) SendMsg(m any) error {
	return s.hold.Send(func() error { return s.ServerStream.SendMsg(m) })
}
