package grpclock

import (
	"context"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/guard/rpckey"
)

// firstMsgStream is a stream keyed by its first message: rpckey's
// FirstMessage on grpc-go's ServerStream.
type firstMsgStream struct {
	grpc.ServerStream
	lock *rpckey.FirstMessage[*Call]
}

func (c *config) serveFirstMessage(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	base, method := ss.Context(), info.FullMethod
	s := &firstMsgStream{ServerStream: ss, lock: c.policy.FirstMessage(base, method,
		func(m any) *Call { return &Call{Ctx: base, FullMethod: method, Msg: m} }, streamPushback(ss))}
	defer func() { err = s.lock.Finish(err) }() // also when the handler panics: the lock is released
	return handler(srv, s)
}

func (s *firstMsgStream) Context() context.Context { return s.lock.Context() }

func (s *firstMsgStream) RecvMsg(m any) error { return s.lock.Receive(m, s.ServerStream.RecvMsg) }

func (s *firstMsgStream) SendMsg(m any) error { return s.lock.Send(m, s.ServerStream.SendMsg) }
