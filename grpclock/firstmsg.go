package grpclock

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/lockkit/lockkit/guard"
)

// A stream keyed by its first message is handed its context before the lock
// exists: handlers read stream.Context() on their first line. That context
// (a slotCtx) is therefore made up front, cancellable, with an empty slot
// for the lease-bound context; the first RecvMsg acquires, fills the slot
// (so core.LeaseFromContext and the Observer's values are seen through the
// context the handler already holds, and through contexts derived from it)
// and ties the cancellation to the lease.

type firstState uint8

const (
	statePending  firstState = iota // no message received yet
	stateOpen                       // holding the lock, running unlocked (fail-open), or no lock to take (EOF / recv error)
	stateRejected                   // the lock refused the stream: rejErr is its status
	stateEnded                      // the handler returned
)

type firstMsgStream struct {
	grpc.ServerStream
	c      *config
	method string
	base   context.Context // the stream's own context
	ctx    *slotCtx
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	state    firstState
	hold     *guard.Hold
	rejErr   error
	stopLost func() bool
}

func (c *config) serveFirstMessage(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	base := ss.Context()
	cctx, cancel := context.WithCancelCause(base)
	s := &firstMsgStream{ServerStream: ss, c: c, method: info.FullMethod, base: base, ctx: &slotCtx{Context: cctx}, cancel: cancel}
	defer func() { // also when the handler panics: the lock is released
		h, rejErr := s.end()
		switch {
		case rejErr != nil:
			err = rejErr
		case h != nil && endedDuring(h, base, err):
			err = c.ended(base, ss.SetTrailer, info.FullMethod, h, err)
		}
		if h != nil {
			c.release(base, info.FullMethod, h)
		}
	}()
	return handler(srv, s)
}

func (s *firstMsgStream) Context() context.Context { return s.ctx }

func (s *firstMsgStream) RecvMsg(m any) error {
	s.mu.Lock()
	st, rejErr, h := s.state, s.rejErr, s.hold
	s.mu.Unlock()
	if st == stateRejected {
		return rejErr
	}
	if st != statePending {
		return s.c.recv(s.ServerStream, s.method, h, m)
	}
	err := s.ServerStream.RecvMsg(m)
	if err != nil { // io.EOF before any message, or a broken stream: nothing to lock
		s.setState(stateOpen)
		return err
	}
	return s.acquire(m)
}

func (s *firstMsgStream) SendMsg(m any) error {
	s.mu.Lock()
	st, rejErr := s.state, s.rejErr
	s.mu.Unlock()
	if st == stateRejected {
		return rejErr
	}
	return s.ServerStream.SendMsg(m)
}

func (s *firstMsgStream) setState(st firstState) {
	s.mu.Lock()
	if s.state == statePending {
		s.state = st
	}
	s.mu.Unlock()
}

// acquire takes the lock for the first message m (RecvMsg calls are never
// concurrent, so this runs once).
func (s *firstMsgStream) acquire(m any) error {
	h := s.c.policy.Acquire(s.base, &Call{Ctx: s.base, FullMethod: s.method, Msg: m}, s.method, "")
	if !h.OK() {
		return s.refuse(s.c.policy.Reject(h, s.method))
	}
	s.mu.Lock()
	if s.state != statePending { // the handler already returned (it must not read after that)
		s.mu.Unlock()
		s.c.release(s.base, s.method, h)
		return context.Canceled
	}
	s.state, s.hold = stateOpen, h
	s.ctx.fill(h.Ctx)
	s.stopLost = context.AfterFunc(h.Ctx, func() { s.cancel(context.Cause(h.Ctx)) })
	s.mu.Unlock()
	return nil
}

func (s *firstMsgStream) refuse(r *Rejection) error {
	err := s.c.reject(s.base, s.ServerStream.SetTrailer, r)
	s.mu.Lock()
	if s.state == statePending {
		s.state, s.rejErr = stateRejected, err
	}
	s.mu.Unlock()
	s.cancel(err)
	return err
}

// end marks the handler done and hands back what to release.
func (s *firstMsgStream) end() (*guard.Hold, error) {
	s.mu.Lock()
	h, rejErr, stop := s.hold, s.rejErr, s.stopLost
	s.state, s.hold = stateEnded, nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.cancel(context.Canceled)
	return h, rejErr
}

// slotCtx is the handler's context of a first-message stream: the
// cancellation of a context made before the handler started, the values of
// the lease-bound context once the lock is held.
type slotCtx struct {
	context.Context // context.WithCancelCause(stream context)
	bound           atomic.Pointer[boundRef]
}

type boundRef struct{ ctx context.Context }

func (c *slotCtx) fill(ctx context.Context) { c.bound.Store(&boundRef{ctx}) }

func (c *slotCtx) Value(k any) any {
	v := c.Context.Value(k)
	if v == any(c.Context) {
		// The context package looking up our own cancelCtx (context.Cause,
		// parent linking): only our Context answers with itself. Answer it,
		// so Done, Err and Cause stay those of one context.
		return v
	}
	if b := c.bound.Load(); b != nil {
		if bv := b.ctx.Value(k); bv != nil {
			return bv
		}
	}
	return v
}
