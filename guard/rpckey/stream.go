package rpckey

import (
	"context"

	"github.com/lockkit/lockkit/guard"
)

// FirstMessage is the lock of a stream keyed by its first message
// (guard.FirstMessage) with the Policy's answers: to its refusal, to a
// receive past its MaxHold, and to a handler that failed for the hold's
// end. The adapter's stream wrapper hands it its context, receives and
// sends.
type FirstMessage[R any] struct {
	lock      *guard.FirstMessage[R]
	p         *Policy[R]
	ctx       context.Context // the stream's own
	procedure string
	pushback  Pushback
}

// FirstMessage starts the lock of a stream to procedure whose context is
// ctx. call makes the request its key parts read from the first message;
// pushback sends the stream's retry pushback.
func (p *Policy[R]) FirstMessage(ctx context.Context, procedure string, call func(msg any) R, pushback Pushback) *FirstMessage[R] {
	s := &FirstMessage[R]{p: p, ctx: ctx, procedure: procedure, pushback: pushback}
	s.lock = p.g.FirstMessage(ctx, Name(procedure), call, s.refuse)
	return s
}

func (s *FirstMessage[R]) refuse(h *guard.Hold) error {
	return s.p.Refuse(s.ctx, s.procedure, h, s.pushback)
}

// Context is the handler's context (guard.FirstMessage.Context).
func (s *FirstMessage[R]) Context() context.Context { return s.lock.Context() }

// Receive is the handler's receive into m by recv, the framework's
// (guard.FirstMessage.Receive): the first message takes the lock, and
// the lock's refusal, or past its MaxHold the call's answer, is returned.
func (s *FirstMessage[R]) Receive(m any, recv func(any) error) error {
	return s.p.received(s.ctx, s.procedure, s.lock.Receive(m, recv), s.lock.Hold, s.pushback)
}

// Send is the handler's send of m by send, the framework's: the lock's
// refusal once it refused the stream, else a send the hold knows the
// handler waiting on its client (guard.Hold.Send).
func (s *FirstMessage[R]) Send(m any, send func(any) error) error {
	if err := s.lock.Refused(); err != nil {
		return err
	}
	return s.lock.Hold().Send(func() error { return send(m) })
}

// Finish ends the stream after its handler returned err, releasing its
// hold, and returns the stream's answer (guard.FirstMessage.Finish, with
// Result). Call it in a defer, so a handler that panics releases too.
func (s *FirstMessage[R]) Finish(err error) error {
	return s.lock.Finish(err, s.result, s.release)
}

func (s *FirstMessage[R]) result(h *guard.Hold, err error) error {
	return s.p.Result(s.ctx, s.procedure, h, err, s.pushback)
}

func (s *FirstMessage[R]) release(h *guard.Hold) { s.p.Release(s.ctx, s.procedure, h) }
