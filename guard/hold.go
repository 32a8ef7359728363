package guard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Hold is one request's hold on its lock: the outcome of its acquire and,
// when the handler may run, the handler's context and what to release.
type Hold struct {
	// Lease is nil when the handler runs unlocked (fail-open) or may not
	// run; with several keys it is the last of them (Multi has them all).
	Lease *core.Lease
	// Multi holds several keys, taken together.
	Multi *core.MultiLease
	// Ctx is the handler's context: the request's values plus the lease
	// (and the Observer's hold span), cancelled when the request ends or the
	// lease ends (context.Cause core.ErrLost). The request's own context
	// when the handler runs unlocked.
	Ctx context.Context
	// Outcome is core.OutcomeAcquired or OutcomeUnlocked when the handler
	// may run; otherwise the outcome to answer with, and Err the cause.
	Outcome core.Outcome
	Err     error
	// Key is the lock key, several joined with ", "; "" when it could not
	// be built.
	Key string

	reqCtx  context.Context
	stop    context.CancelFunc
	timeout time.Duration
	maxHold time.Duration

	once   sync.Once // the release: at the handler's return, or while it waits on its client
	relErr error     // what Release reports

	mu       sync.Mutex
	inIO     int         // the handler's goroutines waiting on its client (BeginIO)
	ioDone   uint64      // the waits on the client that ended (EndIO)
	idleStop func() bool // stops the watch of a waiting handler's MaxHold
	grace    *time.Timer // past MaxHold, while the handler waits on its client (IOGrace)
}

// IOGrace is how long a handler past its MaxHold may stay in one wait on
// its client (BeginIO) before its lock is released under it: a write or a
// receive that completes sooner is part of the handler's work, which may go
// on (the lock stays until it returns); one that lasts longer is a client
// that stopped reading or sending, and the lock is freed, at MaxHold plus
// IOGrace at the latest.
const IOGrace = 100 * time.Millisecond

// OK reports whether the handler may run.
func (h *Hold) OK() bool {
	return h.Outcome == core.OutcomeAcquired || h.Outcome == core.OutcomeUnlocked
}

// Acquire builds r's keys and acquires them on ctx (the request's context):
// one key with core.Client.AcquireRequest, several together with
// AcquireAllRequest. name is the telemetry name (the route template, the
// RPC method), never part of the key; method is the HTTP method, which
// SideByMethod reads ("" for an RPC). A key that cannot be built gives a
// hold that is not OK, with the outcome core.Classify gives its error
// (OutcomeBadKey, OutcomeMisconfigured); a misconfiguration is told to
// Config.Misconfigured, once per route.
func (p *Policy[R]) Acquire(ctx context.Context, r R, name, method string) *Hold {
	h := p.acquire(ctx, r, name, method)
	p.misconfigured(r, name, h)
	if !h.OK() {
		if cr := claimRunOf(ctx); cr != nil {
			cr.refused.Store(true) // the handler never began: not an answer to store
		}
	}
	return h
}

func (p *Policy[R]) acquire(ctx context.Context, r R, name, method string) *Hold {
	h := &Hold{reqCtx: ctx, timeout: p.timeout, maxHold: p.req.MaxHold}
	req := p.req
	req.Name = name
	if p.byMethod {
		req.Side = core.WriteSide
		if SafeMethod(method) {
			req.Side = core.ReadSide
		}
	}
	if len(p.keys) == 1 {
		key, err := p.keys[0].build(r)
		h.Key = key
		if err != nil {
			return h.refuse(err)
		}
		l, err := p.client.AcquireRequest(ctx, key, req)
		if h.settle(req, err) {
			h.Lease = l
			h.Ctx, h.stop = l.Bind(ctx)
		}
		return h
	}
	keys := make([]string, len(p.keys))
	for i, k := range p.keys {
		var err error
		if keys[i], err = k.build(r); err != nil {
			h.Key = keys[i]
			return h.refuse(err)
		}
	}
	h.Key = strings.Join(keys, ", ")
	m, err := p.client.AcquireAllRequest(ctx, keys, req)
	if h.settle(req, err) {
		ls := m.Leases()
		h.Multi, h.Lease = m, ls[len(ls)-1]
		h.Ctx, h.stop = m.Bind(ctx)
	}
	return h
}

// refuse records a key that could not be built.
func (h *Hold) refuse(err error) *Hold {
	h.Outcome, h.Err = core.Classify(nil, err), err
	return h
}

// settle records the acquire's outcome; true: the lock is held (the caller
// binds the handler's context to it).
func (h *Hold) settle(req core.Request, err error) bool {
	h.Outcome, h.Err = core.Classify(h.reqCtx, err), err
	if req.FailsOpen(h.reqCtx, err) { // the Client told its Observer
		h.Outcome, h.Ctx = core.OutcomeUnlocked, h.reqCtx
	}
	return h.Outcome == core.OutcomeAcquired
}

// Token is the value of a fencing-token header: the lease's token, or with
// several keys their tokens in the order of the keys taken (canonical),
// comma-separated; "" when nothing is held.
func (h *Hold) Token() string {
	if h.Multi != nil {
		ls := h.Multi.Leases()
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = strconv.FormatInt(l.Token(), 10)
		}
		return strings.Join(parts, ",")
	}
	if h.Lease == nil {
		return ""
	}
	return strconv.FormatInt(h.Lease.Token(), 10)
}

// Lost reports whether the hold was lost under the handler (core.ErrLost).
func (h *Hold) Lost() bool {
	switch {
	case h.Multi != nil:
		return errors.Is(h.Multi.Err(), core.ErrLost)
	case h.Lease != nil:
		return errors.Is(h.Lease.Err(), core.ErrLost)
	}
	return false
}

// Overran reports whether the hold ended by its MaxHold: the handler's
// context ended with cause core.ErrMaxHold.
func (h *Hold) Overran() bool {
	ctx := h.leaseCtx()
	return ctx != nil && errors.Is(context.Cause(ctx), core.ErrMaxHold)
}

// Ended reports whether the hold ended under the handler: Lost or Overran.
func (h *Hold) Ended() bool { return h.Lost() || h.Overran() }

// leaseCtx is the context of what h holds; nil when nothing is held.
func (h *Hold) leaseCtx() context.Context {
	switch {
	case h.Multi != nil:
		return h.Multi.Context()
	case h.Lease != nil:
		return h.Lease.Context()
	}
	return nil
}

// Release ends the hold: the handler's context is cancelled and the lock
// released with a context detached from the request (bounded by
// ReleaseTimeout, or the Client's release timeout), so a client that hung
// up or a handler that panicked never strands the lock. Call it in a defer
// right after an OK Acquire; it is a no-op when nothing is held, and when
// the lock was released at its MaxHold while the handler waited on its
// client (BeginIO) it only reports.
//
// It returns what the adapter reports through its release-error hook: an
// error matching core.ErrLost when the lease was lost while the handler
// ran, or core.ErrMaxHold when it was held for its MaxHold (the handler's
// work was not protected to its end), otherwise the release error, or nil.
func (h *Hold) Release() error {
	if h.Lease == nil {
		return nil
	}
	h.mu.Lock()
	if h.idleStop != nil {
		h.idleStop()
	}
	if h.grace != nil {
		h.grace.Stop()
	}
	h.mu.Unlock()
	h.once.Do(h.release)
	return h.relErr
}

func (h *Hold) release() {
	h.stop()
	ctx := context.WithoutCancel(h.reqCtx)
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	overran := h.Overran() // before the release ends the lease's context
	var err error
	if h.Multi != nil {
		err = h.Multi.Release(ctx)
	} else {
		err = h.Lease.Release(ctx)
	}
	switch {
	case h.Lost():
		err = fmt.Errorf("lockkit: lock %q lost while the handler ran: %w", h.Key, core.ErrLost)
	case overran:
		err = fmt.Errorf("lockkit: lock %q held for its maximum hold (%v) while the handler ran: %w", h.Key, h.maxHold, core.ErrMaxHold)
	}
	if errors.Is(err, core.ErrLost) || errors.Is(err, core.ErrMaxHold) {
		if cr := claimRunOf(h.reqCtx); cr != nil {
			cr.ended.Store(true) // the handler's work was not protected to its end: not stored
		}
	}
	h.relErr = err
}

// BeginIO tells h that a goroutine of the handler now waits on its client,
// doing nothing under the lock, until EndIO: a stream's receive or send, a
// request body's read, an answer's write (Receive, Send, Body and Writer
// call it). A client decides how long those take: one that stops reading
// or sending, or dribbles, would hold the lock until the handler returns.
// So once the hold has ended by its MaxHold, a wait on the client that
// lasts IOGrace (begun before the bound or after it) releases the lock at
// once, without waiting for the handler to return: its context has ended,
// and what it waits to send was made under the lock. A wait that ends
// sooner is part of the handler's work, which keeps the lock until it
// returns. With no MaxHold, or nothing held, it does nothing.
func (h *Hold) BeginIO() {
	if !h.BoundsIO() {
		return
	}
	h.mu.Lock()
	h.inIO++
	if h.idleStop == nil {
		ctx := h.leaseCtx()
		h.idleStop = context.AfterFunc(ctx, func() {
			if errors.Is(context.Cause(ctx), core.ErrMaxHold) {
				h.mu.Lock()
				h.watchIO()
				h.mu.Unlock()
			}
		})
	}
	if h.Overran() {
		h.watchIO()
	}
	h.mu.Unlock()
}

// watchIO (h.mu held), past the hold's MaxHold, starts the grace of the
// wait on the client in progress, if there is one and none runs: if no
// wait ended when it is over and one is still in progress, it was one
// wait all along, and the lock is released; otherwise it starts again for
// the wait in progress.
func (h *Hold) watchIO() {
	if h.inIO == 0 || h.grace != nil {
		return
	}
	seen := h.ioDone
	h.grace = time.AfterFunc(IOGrace, func() {
		h.mu.Lock()
		stuck := h.inIO > 0 && h.ioDone == seen
		h.grace = nil
		if !stuck {
			h.watchIO()
		}
		h.mu.Unlock()
		if stuck {
			h.once.Do(h.release)
		}
	})
}

// EndIO ends what BeginIO began.
func (h *Hold) EndIO() {
	if !h.BoundsIO() {
		return
	}
	h.mu.Lock()
	h.inIO--
	h.ioDone++
	h.mu.Unlock()
}

// Receive is one receive of a stream under h (nil: nothing held), recv
// the framework's, as client I/O (BeginIO). Past the hold's MaxHold it
// returns an error matching core.ErrMaxHold (the adapter answers it as a
// handler failing for it), whatever recv returned, and does not receive
// at all once the hold has ended so: a message that comes after the
// lock's bound must not be used.
func (h *Hold) Receive(recv func() error) error {
	if h == nil {
		return recv()
	}
	h.BeginIO()
	if h.Overran() {
		h.EndIO()
		return h.overranErr()
	}
	err := recv()
	h.EndIO()
	if h.Overran() {
		return h.overranErr()
	}
	return err
}

// Send is one send to the client under h (nil: nothing held), send the
// framework's, as client I/O (BeginIO): a stream's message, an answer's
// bytes. It returns what send returns: past MaxHold the message still
// goes, as it was made under the lock, and the handler learns of the bound
// from its context.
func (h *Hold) Send(send func() error) error {
	if h == nil {
		return send()
	}
	h.BeginIO()
	defer h.EndIO()
	return send()
}

func (h *Hold) overranErr() error {
	return fmt.Errorf("lockkit: lock %q held for its maximum hold (%v): %w", h.Key, h.maxHold, core.ErrMaxHold)
}

// SetToken sets header name of hdr to the hold's fencing token (Token)
// when name is set and a lock is held: an adapter's TokenHeader option.
func (h *Hold) SetToken(hdr HeaderSetter, name string) {
	if name != "" && h.Lease != nil {
		hdr.Set(name, h.Token())
	}
}
