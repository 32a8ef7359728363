package guard

import (
	"context"
	"sync"
	"sync/atomic"
)

// A stream keyed by its first message is handed its context before the lock
// exists: handlers read the stream's context on their first line. That
// context (a slotCtx) is therefore made up front, cancellable, with an
// empty slot for the lease-bound context; the first receive acquires, fills
// the slot (so core.LeaseFromContext and the Observer's values are seen
// through the context the handler already holds, and through contexts
// derived from it) and ties the cancellation to the lease.

type firstState uint8

const (
	statePending firstState = iota // no message received yet
	stateOpen                      // holding the lock, running unlocked (fail-open), or no lock to take (end of stream, receive error)
	stateRefused                   // the lock refused the stream: refusal is its answer
	stateEnded                     // the handler returned
)

// FirstMessage is the lock of one stream keyed by its first message (an RPC
// adapter's FromFirstMessage): the lock is taken inside the handler's first
// receive, on the key that message gives, and held until the handler
// returns. Make one per stream with Policy.FirstMessage; it is safe for the
// handler's receives and sends to call it concurrently, as RPC frameworks
// allow one receiver and one sender at once.
type FirstMessage[R any] struct {
	p         *Policy[R]
	base      context.Context // the stream's own
	procedure string
	call      func(msg any) R
	refuse    func(*Hold) error
	ctx       *slotCtx
	cancel    context.CancelCauseFunc

	mu       sync.Mutex
	state    firstState
	hold     *Hold
	refusal  error
	stopLost func() bool
}

// FirstMessage starts the lock of a stream to procedure whose context is
// base. call makes the request its key parts read from the first message;
// refuse turns a hold that may not run into the protocol's answer (the
// stream's final status).
func (p *Policy[R]) FirstMessage(base context.Context, procedure string, call func(msg any) R, refuse func(*Hold) error) *FirstMessage[R] {
	cctx, cancel := context.WithCancelCause(base)
	return &FirstMessage[R]{p: p, base: base, procedure: procedure, call: call, refuse: refuse, ctx: &slotCtx{Context: cctx}, cancel: cancel}
}

// Context is the handler's context: cancelled with the stream, or when the
// lock refused it, or, once the lock is held, with the lease (cause
// core.ErrLost, core.ErrMaxHold); it carries the lease from the first
// receive on.
func (s *FirstMessage[R]) Context() context.Context { return s.ctx }

// Receive is the handler's receive into m, by recv (the framework's). The
// first message received takes the lock; its refusal is returned then,
// and by every later Receive and Refused. After it, Receive is
// Hold.Receive: an error matching core.ErrMaxHold once the hold ended so.
// A stream that ends (or breaks) before any message takes no lock.
func (s *FirstMessage[R]) Receive(m any, recv func(any) error) error {
	s.mu.Lock()
	st, refusal, h := s.state, s.refusal, s.hold
	s.mu.Unlock()
	switch {
	case st == stateRefused:
		return refusal
	case st != statePending:
		return h.Receive(func() error { return recv(m) })
	}
	if err := recv(m); err != nil { // the end before any message, or a broken stream: nothing to lock
		s.setState(stateOpen)
		return err
	}
	return s.acquire(m)
}

// Hold is the stream's hold, nil before its first message took the lock.
func (s *FirstMessage[R]) Hold() *Hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold
}

// Refused is the lock's refusal of the stream, nil while it is not
// refused: the handler's sends return it.
func (s *FirstMessage[R]) Refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateRefused {
		return s.refusal
	}
	return nil
}

func (s *FirstMessage[R]) setState(st firstState) {
	s.mu.Lock()
	if s.state == statePending {
		s.state = st
	}
	s.mu.Unlock()
}

// acquire takes the lock for the first message m (receives are never
// concurrent, so this runs once).
func (s *FirstMessage[R]) acquire(m any) error {
	h := s.p.Acquire(s.base, s.call(m), s.procedure, "")
	if !h.OK() {
		err := s.refuse(h)
		s.mu.Lock()
		if s.state == statePending {
			s.state, s.refusal = stateRefused, err
		}
		s.mu.Unlock()
		s.cancel(err)
		return err
	}
	s.mu.Lock()
	if s.state != statePending { // the handler already returned (it must not receive after that)
		s.mu.Unlock()
		_ = h.Release()
		return context.Canceled
	}
	s.state, s.hold = stateOpen, h
	if h.Lease != nil {
		s.ctx.fill(h.Ctx)
		s.stopLost = context.AfterFunc(h.Ctx, func() { s.cancel(context.Cause(h.Ctx)) })
	}
	s.mu.Unlock()
	return nil
}

// Finish ends the stream after its handler returned err, releasing the
// hold with release, and returns the stream's answer: the lock's refusal
// when it refused the stream, else answer(h, err) (the adapter's answer to
// a handler that may have failed for the hold's end) when a lock was taken,
// else err. Call it in a defer, so a handler that panics releases too.
func (s *FirstMessage[R]) Finish(err error, answer func(h *Hold, err error) error, release func(h *Hold)) error {
	h, refusal := s.End()
	switch {
	case refusal != nil:
		err = refusal
	case h != nil:
		err = answer(h, err)
	}
	if h != nil {
		release(h)
	}
	return err
}

// End marks the handler done: it returns the hold to release (nil when no
// lock was taken) and the refusal to answer with instead of the handler's
// result (nil when the lock did not refuse the stream). Call it in a defer,
// so a handler that panics releases too.
func (s *FirstMessage[R]) End() (*Hold, error) {
	s.mu.Lock()
	h, refusal, stop := s.hold, s.refusal, s.stopLost
	s.state, s.hold = stateEnded, nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.cancel(context.Canceled)
	return h, refusal
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
