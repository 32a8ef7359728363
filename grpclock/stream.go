package grpclock

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// StreamServerInterceptor returns an interceptor that holds a lock for the
// whole life of each stream: from before the handler runs (key from metadata,
// Const, Func or KeyFromMethod) or from the handler's first RecvMsg
// (FromFirstMessage) until the handler returns.
//
// A stream keyed up front that cannot get the lock never reaches its handler.
// A stream keyed by its first message gets the refusal from that RecvMsg
// (and from every later RecvMsg and SendMsg), its context is cancelled, and
// the refusal (Aborted, Unavailable, ...) is the stream's final status
// whatever the handler returns. The handler's context is cancelled with
// cause core.ErrLost if the lease is lost.
//
// It panics on a nil client, a bad option value, or no key source: a stream
// has no message before its handler runs, so there is no default.
func StreamServerInterceptor(client *core.Client, opts ...Option) grpc.StreamServerInterceptor {
	c := newConfig(client, opts, true)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if c.firstMsg {
			return c.serveFirstMessage(srv, ss, info, handler)
		}
		ctx := ss.Context()
		h := c.policy.Acquire(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod}, info.FullMethod, "")
		if !h.OK() {
			return c.reject(ctx, ss.SetTrailer, c.policy.Reject(h, info.FullMethod))
		}
		defer c.release(ctx, info.FullMethod, h)
		err := handler(srv, &boundStream{ServerStream: ss, ctx: h.Ctx, hold: h})
		if endedDuring(h, ctx, err) {
			return c.ended(ctx, ss.SetTrailer, info.FullMethod, h, err)
		}
		return err
	}
}

// boundStream hands the handler the lease-bound context, and tells the hold
// when the handler waits for a message (MaxHold frees an idle stream's
// lock).
type boundStream struct {
	grpc.ServerStream
	ctx  context.Context
	hold *guard.Hold
}

func (s *boundStream) Context() context.Context { return s.ctx }

func (s *boundStream) RecvMsg(m any) error { return recv(s.ServerStream, s.hold, m) }

// recv receives m on ss while h (nil: nothing held) knows the handler
// idle, and turns the hold's end by MaxHold into the call's status.
func recv(ss grpc.ServerStream, h *guard.Hold, m any) error {
	if h == nil {
		return ss.RecvMsg(m)
	}
	if err := h.BeginReceive(); err != nil {
		return overranStatus(err)
	}
	err := h.EndReceive(ss.RecvMsg(m))
	if errors.Is(err, core.ErrMaxHold) {
		return overranStatus(err)
	}
	return err
}

// overranStatus is RecvMsg's error after the hold's MaxHold: the call is
// over for the lock (codes.Aborted, as a handler failing for it is
// answered).
func overranStatus(err error) error { return status.Error(codes.Aborted, err.Error()) }
