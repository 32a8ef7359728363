package grpclock

import (
	"context"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
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
		err := handler(srv, &boundStream{ServerStream: ss, ctx: h.Ctx})
		if lostDuring(h, ctx, err) {
			return c.reject(ctx, ss.SetTrailer, c.policy.Rejection(core.OutcomeLost, info.FullMethod, h.Key, err))
		}
		return err
	}
}

// boundStream hands the handler the lease-bound context.
type boundStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *boundStream) Context() context.Context { return s.ctx }
