package grpclock

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// firstMsgStream is a stream keyed by its first message: guard.FirstMessage
// on grpc-go's ServerStream.
type firstMsgStream struct {
	grpc.ServerStream
	c      *config
	method string
	lock   *guard.FirstMessage[*Call]
}

func (c *config) serveFirstMessage(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	base, method := ss.Context(), info.FullMethod
	s := &firstMsgStream{ServerStream: ss, c: c, method: method}
	s.lock = c.policy.FirstMessage(base, rpckey.Name(method), func(m any) *Call { return &Call{Ctx: base, FullMethod: method, Msg: m} },
		func(h *guard.Hold) error { return c.reject(base, ss.SetTrailer, c.policy.Reject(h, method)) })
	defer func() { // also when the handler panics: the lock is released
		err = s.lock.Finish(err, func(h *guard.Hold, err error) error {
			if endedDuring(h, base, err) {
				return c.ended(base, ss.SetTrailer, method, h, err)
			}
			return err
		}, func(h *guard.Hold) { c.rpc.Release(base, method, h) })
	}()
	return handler(srv, s)
}

func (s *firstMsgStream) Context() context.Context { return s.lock.Context() }

func (s *firstMsgStream) RecvMsg(m any) error {
	err := s.lock.Receive(m, s.ServerStream.RecvMsg)
	if errors.Is(err, core.ErrMaxHold) {
		return s.c.ended(s.ServerStream.Context(), s.ServerStream.SetTrailer, s.method, s.lock.Hold(), err)
	}
	return err
}

func (s *firstMsgStream) SendMsg(m any) error {
	if err := s.lock.Refused(); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}
