package connectlock

import (
	"context"

	"connectrpc.com/connect"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// UnaryInterceptor returns an interceptor that runs each unary call of a
// handler holding the lock on its key: by default the request message's
// LockKey(), or what Key / KeyFromRoute say. The procedure without its
// leading slash (rpckey.Name) is the lock's name (telemetry), never part
// of the key. Add it to a handler with
// connect.WithInterceptors; it lets streams and clients through untouched.
//
// The handler gets a context carrying the lease (core.LeaseFromContext),
// cancelled when the call ends or the lease ends (context.Cause
// core.ErrLost, core.ErrMaxHold). The lock is released, on a context
// detached from the call, when the handler returns or panics.
//
// With Idempotent, a call carrying an idempotency key runs once
// (IdempotentInterceptor) and takes the lock only when it runs.
//
// It panics on a nil client or a bad option value.
func UnaryInterceptor(client *core.Client, opts ...Option) connect.Interceptor {
	return unary{newConfig(client, opts, false)}
}

// StreamInterceptor returns an interceptor that holds a lock for the whole
// life of each stream of a handler: from before the handler runs (the key
// from headers, Const, Func or KeyFromRoute) or from the handler's first
// Receive (FromFirstMessage) until the handler returns. It lets unary calls
// and clients through untouched.
//
// It panics on a nil client, a bad option value, Idempotent (a stream's
// answer is no message a record can replay), or no key source: a stream
// has no message before its handler runs, so there is no default.
func StreamInterceptor(client *core.Client, opts ...Option) connect.Interceptor {
	return stream{newConfig(client, opts, true)}
}

type unary struct{ c *config }

func (i unary) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	c := i.c
	lock := c.lockUnary(next)
	if c.idempotency == nil {
		return lock
	}
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		return c.idempotency.intercept(ctx, req, lock)
	}
}

// lockUnary runs a unary call of next holding its lock.
func (c *config) lockUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		proc := req.Spec().Procedure
		h := c.policy.Acquire(ctx, &Call{Ctx: ctx, Procedure: proc, Header: req.Header(), Msg: req.Any()}, proc)
		if !h.OK() {
			return nil, c.policy.Refuse(ctx, proc, h, setPushback)
		}
		defer c.policy.Release(ctx, proc, h)
		res, err := next(h.Ctx, req)
		if err = c.policy.Result(ctx, proc, h, err, setPushback); err != nil {
			return nil, err
		}
		return res, nil
	}
}

func (unary) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (unary) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

type stream struct{ c *config }

func (stream) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (stream) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i stream) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	c := i.c
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if c.rpc.FirstMessage {
			return c.serveFirstMessage(ctx, conn, next)
		}
		proc := conn.Spec().Procedure
		h := c.policy.Acquire(ctx, &Call{Ctx: ctx, Procedure: proc, Header: conn.RequestHeader()}, proc)
		if !h.OK() {
			return c.policy.Refuse(ctx, proc, h, setPushback)
		}
		defer c.policy.Release(ctx, proc, h)
		return c.policy.Result(ctx, proc, h, next(h.Ctx, &boundConn{StreamingHandlerConn: conn, c: c, ctx: ctx, hold: h}), setPushback)
	}
}

// boundConn tells the hold when the handler waits for a message (MaxHold
// frees the lock of a stream waiting on its client, to receive or to send).
type boundConn struct {
	connect.StreamingHandlerConn
	c    *config
	ctx  context.Context // the stream's
	hold *guard.Hold
}

// Receive receives m while the hold knows the handler idle. Past the
// hold's MaxHold it returns the call's answer, CodeAborted with a retry
// hint, as to a handler that failed for it.
func (s *boundConn) Receive(m any) error {
	return s.c.policy.Receive(s.ctx, s.Spec().Procedure, s.hold,
		func() error { return s.StreamingHandlerConn.Receive(m) }, setPushback)
}

// Send sends m while the hold knows the handler waiting on its client
// (guard.Hold.Send): a client that stops reading frees the lock at MaxHold.
func (s *boundConn) Send(m any) error {
	return s.hold.Send(func() error { return s.StreamingHandlerConn.Send(m) })
}

// firstMsgConn is a stream keyed by its first message: rpckey's
// FirstMessage on connect's StreamingHandlerConn.
type firstMsgConn struct {
	connect.StreamingHandlerConn
	lock *rpckey.FirstMessage[*Call]
}

func (c *config) serveFirstMessage(ctx context.Context, conn connect.StreamingHandlerConn, next connect.StreamingHandlerFunc) (err error) {
	proc := conn.Spec().Procedure
	s := &firstMsgConn{StreamingHandlerConn: conn, lock: c.policy.FirstMessage(ctx, proc,
		func(m any) *Call { return &Call{Ctx: ctx, Procedure: proc, Header: conn.RequestHeader(), Msg: m} }, setPushback)}
	defer func() { err = s.lock.Finish(err) }() // also when the handler panics: the lock is released
	return next(s.lock.Context(), s)
}

func (s *firstMsgConn) Receive(m any) error { return s.lock.Receive(m, s.StreamingHandlerConn.Receive) }

func (s *firstMsgConn) Send(m any) error { return s.lock.Send(m, s.StreamingHandlerConn.Send) }
