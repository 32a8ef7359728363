package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

type leaseState uint8

const (
	stateHeld leaseState = iota
	stateReleased
	stateLost
	stateClosed
	// stateOverdue: held for its MaxHold. Its context has ended (cause
	// ErrMaxHold) and it is no longer renewed, but the lock is still its own
	// in Redis until Release or expiry, so Release still releases it.
	stateOverdue
)

// Lease is one holding of a lock. Its Context lives as long as the lease:
// cancelled on Release (context.Canceled), on loss (cause ErrLost), on
// Client.Close (cause ErrClosed) and at its MaxHold (cause ErrMaxHold). A
// Lease is safe for concurrent use.
type Lease struct {
	c          *Client
	key, name  string
	names      redisNames
	token      string // owner token: the right to extend and release
	fence      int64
	mode       sharedMode // the side or permit a shared lease holds (0: mutex)
	noRenew    bool
	maxHold    time.Duration // MaxHold; 0: none
	retention  time.Duration // a claim's (Client.Claim): how long Complete keeps its answer
	acquiredAt time.Time
	// grant: the hand-off that gave this lease the lock, granted before
	// its reply (see grant); nil for a lease its own attempt took.
	grant *grant

	ctx    context.Context // &lctx
	cancel context.CancelCauseFunc
	// lctx and base are the lease's context and the values-only parent it
	// derives from, kept inside the Lease so taking a lock allocates them
	// with it (see newLeaseCtx).
	lctx leaseCtx
	base valuesOnly
	// bound is the deadline of Release's call (see callBound).
	bound callBound
	// parent is the lease the acquire context already carried: the chain
	// reentrancy walks. root is the outer lease of a nested (reentrant) one.
	parent, root *Lease
	stopOuter    func() bool // nested: detaches from the outer lease's end

	mu    sync.Mutex
	state leaseState

	// deadlineNs is the local validity deadline — send time of the last
	// confirmed (re)acquire + TTL − drift — as nanoseconds on the Client's
	// monotonic clock (since c.epoch). Atomic: Err checks it at every look.
	deadlineNs atomic.Int64
	// holdNs is when the lease has been held for its MaxHold, on the same
	// clock; 0: no bound. Set before the lease is handed out.
	holdNs atomic.Int64

	// Scheduling state, guarded by c.ren.mu.
	ttl      time.Duration
	renewAt  time.Time
	due      time.Time // heap order: renewAt when idle, deadline while a renewal is in flight
	inflight bool
	overdue  bool // held for its MaxHold: no longer renewed
	idx      int  // heap index; -1 when not scheduled
}

type leaseCtxKey struct{}

// LeaseFromContext returns the innermost lease ctx carries: the handler's
// context in the adapters, Lease.Context() and contexts derived from them.
func LeaseFromContext(ctx context.Context) (*Lease, bool) {
	l := leaseFrom(ctx)
	return l, l != nil
}

// ClaimFromContext returns the innermost idempotency claim (Client.Claim)
// ctx carries: the handler's context under an idempotency middleware,
// whether a lock taken inside it (LeaseFromContext's answer then) is
// carried too. Its Token fences the handler's writes against a retry that
// takes the record over after this claim's owner stalled or crashed.
func ClaimFromContext(ctx context.Context) (*Lease, bool) {
	for l := leaseFrom(ctx); l != nil; l = l.parent {
		if l.names.kind == kindRecord {
			return l, true
		}
	}
	return nil, false
}

func leaseFrom(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseCtxKey{}).(*Lease)
	return l
}

// Key is the lock key as given to Acquire.
func (l *Lease) Key() string { return l.key }

// Name is the telemetry name given with the Name option.
func (l *Lease) Name() string { return l.name }

// Token is the fencing token: strictly larger than the token of every
// earlier holder of this key (docs/fencing.md says when that holds). Pass it
// to the resource you protect and have it reject smaller tokens.
func (l *Lease) Token() int64 { return l.fence }

// Context keeps the values of the acquire context (and what the Observer
// added) but not its cancellation; it ends with the lease. Use
// context.Cause to tell ErrLost from a release.
func (l *Lease) Context() context.Context { return l.ctx }

// Done is Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Err is nil while the lease is held; then ErrNotHeld (released), ErrLost,
// ErrClosed, or ErrMaxHold (held for its MaxHold, until Release). A nested
// lease reports its outer lease's end.
func (l *Lease) Err() error {
	l.checkDeadline()
	l.mu.Lock()
	st := l.state
	l.mu.Unlock()
	if st == stateHeld && l.root != nil {
		return l.root.Err()
	}
	return stateErr(st)
}

func stateErr(st leaseState) error {
	switch st {
	case stateReleased:
		return ErrNotHeld
	case stateLost:
		return ErrLost
	case stateClosed:
		return ErrClosed
	case stateOverdue:
		return ErrMaxHold
	}
	return nil
}

// Until is the local validity deadline: until then the lock is certainly
// held (the server's expiry is later). It moves forward with each confirmed
// renewal.
func (l *Lease) Until() time.Time { return l.rootLease().deadline() }

// deadline is the root lease's local validity deadline (see deadlineNs).
func (l *Lease) deadline() time.Time { return l.c.epoch.Add(time.Duration(l.deadlineNs.Load())) }

// TTL is the lease's current TTL.
func (l *Lease) TTL() time.Duration {
	r := l.rootLease()
	l.c.ren.mu.Lock()
	defer l.c.ren.mu.Unlock()
	return r.ttl
}

// checkDeadline ends the lease on the spot when its local deadline has
// passed, so the first look after a long freeze (GC pause, SIGSTOP) already
// sees it lost, without waiting for the engine's timer goroutine to run.
func (l *Lease) checkDeadline() {
	r := l.rootLease()
	if d := r.deadlineNs.Load(); d != 0 && l.c.monoNow() >= d && r.stillOurs() {
		r.lose(ErrLost)
	}
	if h := r.holdNs.Load(); h != 0 && l.c.monoNow() >= h && r.held() {
		r.overrun()
	}
	if l.root != nil && !l.root.held() {
		l.endWithOuter()
	}
}

func (l *Lease) rootLease() *Lease {
	if l.root != nil {
		return l.root
	}
	return l
}

// kind is the lease's Kind (KindMutex, KindSemaphore, KindRead, KindWrite).
func (l *Lease) kind() string {
	switch l.names.kind {
	case kindMutex:
		return KindMutex
	case kindRecord:
		return KindClaim
	}
	return l.mode.kind()
}

func (l *Lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == stateHeld && (l.root == nil || l.root.held())
}

// stillOurs reports whether the lock may still be l's in Redis: held, or
// held for its MaxHold and not yet released.
func (l *Lease) stillOurs() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == stateHeld || l.state == stateOverdue
}

func (l *Lease) info() LeaseInfo {
	return LeaseInfo{Key: l.key, Name: l.name, Kind: l.kind(), Owner: l.c.cfg.owner, Token: l.fence, AcquiredAt: l.acquiredAt, Held: time.Since(l.acquiredAt)}
}

// finish moves a held lease to its final state and cancels its context; it
// reports whether this call did it (a lease ends once).
func (l *Lease) finish(st leaseState, cause error) bool {
	l.mu.Lock()
	if l.state != stateHeld && l.state != stateOverdue {
		l.mu.Unlock()
		return false
	}
	// Cancel before anyone can read the new state: Err and Context().Err()
	// never disagree. (Cancelling runs no callback of ours synchronously:
	// derived contexts are plain, AfterFunc callbacks run in goroutines.)
	l.state = st
	l.cancel(cause)
	l.mu.Unlock()
	if l.stopOuter != nil {
		l.stopOuter()
	}
	if l.root == nil {
		l.c.ren.remove(l)
	}
	return true
}

// lose ends a root lease as lost: its context is cancelled with cause
// ErrLost at once, and the local queue moves on.
func (l *Lease) lose(cause error) {
	l.mu.Lock()
	told := l.state == stateOverdue // the Observer heard of its end then
	l.mu.Unlock()
	if !l.finish(stateLost, cause) {
		return
	}
	// Best effort, owner-checked: if the server still has our token (its
	// expiry is later than our deadline, or Redis was only frozen), free it
	// now rather than at its TTL. It never extends anything.
	l.releaseLater()
	l.c.localRelease(l.names.queue)
	if !told {
		l.c.obs.Lost(l.ctx, l.info(), cause)
	}
}

// overrun ends a root lease held for its MaxHold: it is no longer renewed,
// its context is cancelled with cause ErrMaxHold and the Observer is told
// (Lost). The lock stays l's in Redis, so that nobody takes it while l's
// holder may still run: Release frees it, or its expiry does, within one
// TTL, when the scheduler finds the local deadline passed and l lost.
func (l *Lease) overrun() {
	l.c.ren.stopRenewing(l)
	l.mu.Lock()
	if l.state != stateHeld {
		l.mu.Unlock()
		return
	}
	l.state = stateOverdue
	l.cancel(ErrMaxHold) // under mu, as in finish
	l.mu.Unlock()
	l.c.obs.Lost(l.ctx, l.info(), ErrMaxHold)
}

// releaseLater gives l's token back in the background (Client.releaseLater),
// after the reply of the hand-off that gave l the lock when it is still on
// its way: sent before it, the give-back could overtake the script that
// gives the lock to l's token.
func (l *Lease) releaseLater() {
	g := l.grant
	if g == nil {
		l.c.releaseLater(l.names, l.token)
		return
	}
	l.c.background(func() {
		<-g.done                           // closed by the hand-off's sender, within the release timeout
		if g.replyOK() || g.mayHaveRun() { // else the token never held the lock
			l.c.giveBack(l.names, l.token)
		}
	})
}

// awaitHandoff waits, bounded by ctx, for the reply of the hand-off that
// gave l the lock, if it is still on its way: whatever l sends to Redis
// about the lock must follow that script. It returns ctx's error when ctx
// ended first, and ErrNotHeld when the reply said the releaser no longer
// held the lock (l is lost then).
func (l *Lease) awaitHandoff(ctx context.Context) error {
	g := l.grant
	if g == nil {
		return nil
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !g.replyOK() {
		return ErrNotHeld
	}
	return nil
}

// Release gives the lock up: renewal stops and the context ends at once,
// even when Redis is down; then one owner-checked script deletes the lock
// and wakes waiters. Without a deadline on ctx the call is bounded by the
// release timeout. Pass a context that is not already cancelled
// (context.WithoutCancel(reqCtx)), or the lock stays until its TTL.
//
// Errors: ErrNotHeld on a second Release and after loss (then it also
// matches ErrLost), ErrClosed after Client.Close, ErrUnavailable when Redis
// did not answer (the lock then expires at its TTL).
func (l *Lease) Release(ctx context.Context) error {
	if l.root != nil {
		if !l.finish(stateReleased, context.Canceled) {
			return l.endedErr()
		}
		return nil
	}
	if !l.finish(stateReleased, context.Canceled) {
		return l.endedErr()
	}
	c := l.c
	// The caller's ctx decides "ended by the caller"; our own bound on a ctx
	// without deadline is a Redis that did not answer (ErrUnavailable).
	bctx := l.bound.bound(ctx, c.cfg.releaseTimeout)
	defer l.bound.end()
	if bctx.Err() == nil { // a call that cannot be sent hands nothing over
		// Before the reply of the hand-off that gave l the lock, if one is
		// on its way: the next hand-off follows it in the lock's line.
		if g, q, lead := c.pickHandoff(l); g != nil {
			return l.handoff(ctx, bctx, q, g, lead)
		}
	}
	if err := l.awaitHandoff(bctx); err != nil {
		l.releaseLater() // once the hand-off's reply is in, if the token may hold the lock
		if !errors.Is(err, ErrNotHeld) {
			err = c.callErr(ctx, "release", l.key, err)
		} else {
			err = handoffUnconfirmed(l.key)
		}
		c.localRelease(l.names.queue)
		c.obs.Released(l.ctx, l.info(), err)
		return err
	}
	var ok, elsewhere bool
	var err error
	if p, shared := c.b.(*primary); shared && l.names.kind.shared() {
		ok, elsewhere, err = p.releaseShared(bctx, l.names, l.token, c.queueID(l.names.queue))
	} else {
		ok, err = c.b.release(bctx, l.names, l.token, l.keepsExpiry())
	}
	c.localReleased(l.names.queue, elsewhere)
	switch {
	case err != nil:
		err = c.callErr(ctx, "release", l.key, err)
	case !ok:
		err = fmt.Errorf("lockkit: release %q: %w (expired or removed on the server)", l.key, ErrNotHeld)
	}
	c.obs.Released(l.ctx, l.info(), err)
	return err
}

// handoff passes the lock to the head of this Client's queue, already
// granted g by pickHandoff: one script, released and re-acquired in one
// round trip, nobody else woken, and the receiver at work while it
// travels. lead: this call sends it (and hands the hand-offs granted
// meanwhile to a goroutine of the Client); else it is in the lock's line
// behind a batch on its way, and this call waits for its reply.
func (l *Lease) handoff(ctx, bctx context.Context, q *keyQueue, g *grant, lead bool) error {
	c := l.c
	if lead {
		if next := c.sendHops(bctx, q, []*grant{g}); next != nil {
			base := context.WithoutCancel(bctx)
			c.background(func() {
				for next != nil {
					hctx, cancel := context.WithTimeout(base, c.cfg.releaseTimeout)
					next = c.sendHops(hctx, q, next)
					cancel()
				}
			})
		}
	}
	var err error
	select {
	case <-g.done:
	case <-bctx.Done():
		// The hand-off still goes, in its turn; its reply decides the
		// receiver's lease. This caller only stops waiting for it.
		err = c.callErr(ctx, "release", l.key, bctx.Err())
		c.obs.Released(l.ctx, l.info(), err)
		return err
	}
	switch {
	case errors.Is(g.err, errLineBroken):
		err = handoffUnconfirmed(l.key)
	case g.err != nil:
		err = c.callErr(ctx, "release", l.key, g.err)
	case !g.rep.ok:
		err = fmt.Errorf("lockkit: release %q: %w (expired or removed on the server)", l.key, ErrNotHeld)
	case g.rep.fence != g.fence:
		err = fmt.Errorf("lockkit: release %q: hand-off answered fence %d, want %d", l.key, g.rep.fence, g.fence)
	}
	c.obs.Released(l.ctx, l.info(), err)
	return err
}

// handoffUnconfirmed is Release's error for a lease whose hand-off was not
// confirmed: it never held the lock in Redis (or cannot say it did).
func handoffUnconfirmed(key string) error {
	return fmt.Errorf("lockkit: release %q: %w (the hand-off that gave it was not confirmed)", key, ErrNotHeld)
}

func (l *Lease) endedErr() error {
	l.mu.Lock()
	st := l.state
	l.mu.Unlock()
	switch st {
	case stateLost:
		return fmt.Errorf("lockkit: lease %q: %w: %w", l.key, ErrNotHeld, ErrLost)
	case stateClosed:
		return ErrClosed
	case stateOverdue:
		return fmt.Errorf("lockkit: lease %q: %w", l.key, ErrMaxHold)
	}
	return fmt.Errorf("lockkit: lease %q: %w (already released)", l.key, ErrNotHeld)
}

// Extend resets the lock's TTL to ttl now and uses ttl for later renewals.
// It fails with ErrNotHeld (and the lease is lost) when another owner holds
// the lock or it expired.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	r := l.rootLease()
	if !l.held() {
		return l.endedErr()
	}
	c := l.c
	bctx, cancel := boundedCtx(ctx, c.cfg.releaseTimeout)
	defer cancel()
	if err := r.awaitHandoff(bctx); errors.Is(err, ErrNotHeld) {
		return l.endedErr() // lost with the hand-off
	} else if err != nil {
		return c.callErr(ctx, "extend", l.key, err)
	}
	sent := time.Now()
	ok, err := c.b.extend(bctx, r.names, r.token, ttl)
	if err != nil {
		return c.callErr(ctx, "extend", l.key, err)
	}
	if !ok {
		r.lose(ErrLost)
		return l.endedErr()
	}
	c.ren.confirm(r, sent, ttl)
	return nil
}

// nest returns a nested lease of outer for a reentrant acquire: no Redis
// call, same token, ended by its own Release or by the end of outer.
func (outer *Lease) nest(ctx context.Context, name string) *Lease {
	root := outer.rootLease()
	n := &Lease{
		c: outer.c, key: outer.key, name: name, names: outer.names, token: root.token, fence: root.fence,
		noRenew: root.noRenew, acquiredAt: time.Now(), parent: leaseFrom(ctx), root: root, idx: -1,
	}
	if n.name == "" {
		n.name = root.name
	}
	n.initCtx(ctx)
	n.stopOuter = context.AfterFunc(outer.ctx, n.endWithOuter)
	return n
}

// endWithOuter ends a nested lease because its outer lease ended, with the
// outer lease's state and cause.
func (n *Lease) endWithOuter() {
	root := n.root
	root.mu.Lock()
	st := root.state
	root.mu.Unlock()
	if st == stateHeld { // the direct outer lease is a nested one that was released
		st = stateReleased
	}
	n.mu.Lock()
	if n.state != stateHeld {
		n.mu.Unlock()
		return
	}
	n.state = st
	n.cancel(context.Cause(root.ctx)) // under mu, as in finish
	n.mu.Unlock()
}

// leaseCtx is a lease's context: a cancel context carrying the lease, whose
// Err checks the lease's deadline itself (see checkDeadline). Done and the
// parent linking of derived contexts are those of the embedded context.
type leaseCtx struct {
	context.Context // context.WithCancelCause(base)
	l               *Lease
}

// initCtx makes l's context: values of from (the acquire's hold context),
// none of its cancellation (a lease outlives the request that took it),
// cancelled with a cause when the lease ends. What context.WithoutCancel
// and a wrapper would allocate lives in the Lease; context.Cause still
// finds the lease's own cancel context first.
func (l *Lease) initCtx(from context.Context) {
	l.base = valuesOnly{from}
	inner, cancel := context.WithCancelCause(&l.base)
	l.lctx = leaseCtx{Context: inner, l: l}
	l.ctx, l.cancel = &l.lctx, cancel
}

// valuesOnly is context.WithoutCancel without the allocation: the values
// of the embedded context, never done, no deadline.
type valuesOnly struct{ context.Context }

func (valuesOnly) Deadline() (time.Time, bool) { return time.Time{}, false }
func (valuesOnly) Done() <-chan struct{}       { return nil }
func (valuesOnly) Err() error                  { return nil }

func (c *leaseCtx) Value(k any) any {
	if _, ok := k.(leaseCtxKey); ok {
		return c.l
	}
	return c.Context.Value(k)
}

func (c *leaseCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	c.l.checkDeadline()
	return c.Context.Err()
}

// Bind returns a context for work done under the lease: it carries ctx's
// values plus the lease (and what the Observer attached, e.g. the hold span),
// keeps ctx's deadline, and is cancelled when ctx ends or the lease ends
// (then context.Cause is ErrLost, ErrClosed or context.Canceled). The
// adapters hand it to the handler. Call the CancelFunc when done.
//
// The lease's values win over ctx's for keys both carry; the lease's come
// from the acquire context, normally an ancestor of (or equal to) ctx.
func (l *Lease) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(l.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return &boundCtx{Context: inner, parent: ctx, l: l}, func() {
		stop()
		cancel(context.Canceled)
	}
}

type boundCtx struct {
	context.Context // cancellation and values of the lease (a child of l.ctx)
	parent          context.Context
	l               *Lease
}

func (b *boundCtx) Deadline() (time.Time, bool) { return b.parent.Deadline() }

// Err reports the parent's error first, so a request deadline still reads
// as context.DeadlineExceeded.
func (b *boundCtx) Err() error {
	if b.Context.Err() == nil {
		b.l.checkDeadline() // a lease past its deadline ends here, and this child with it
	}
	if err := b.Context.Err(); err != nil {
		if perr := b.parent.Err(); perr != nil {
			return perr
		}
		return err
	}
	return nil
}

func (b *boundCtx) Value(k any) any {
	if v := b.Context.Value(k); v != nil {
		return v
	}
	return b.parent.Value(k)
}

// keepsExpiry: the lock's expiry in Redis is known to lie between
// fenceKeepMin and 3×fenceKeep from now (the local deadline is a lower bound
// of it, and the last confirmation + TTL an upper bound), so a release can
// leave it as it is: the last fencing token is kept long enough (the TIME
// floor of the next token needs microseconds, not seconds), and the
// released hash not much longer than release.lua's own expiry would keep
// it. That saves the release script a call on the common path (a TTL of
// seconds, renewed).
func (l *Lease) keepsExpiry() bool {
	return l.ttl <= 3*fenceKeep && time.Until(l.deadline()) >= fenceKeepMin
}
