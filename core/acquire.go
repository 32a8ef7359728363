package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Acquire takes the lock on key, waiting while another owner holds it: in
// this Client's FIFO queue for the key, then (as its head) for the release
// notification, never by polling. It returns when the lock is held, or with
//   - an error matching ctx.Err() when ctx ends first, whatever else happened;
//   - ErrNotAcquired when the wait budget (Wait) runs out after the lock was
//     seen held during this wait, or at once when a lease of this Client
//     holds it (NoWait) or the local queue is full (MaxWaiters);
//   - ErrUnavailable when Redis answers with an error, or when the budget
//     runs out and nobody was seen holding the lock: Redis did not answer
//     in time (the cause says "no answer from redis within the wait
//     budget"). This is true of a waiter queued behind this Client's head
//     as well: the head's unanswered attempt tells it nothing about a holder;
//   - ErrClosed on Close.
//
// Seen held means an answer of Redis naming another holder (to this
// caller's attempt, or to the head of its queue while it waited behind it,
// or just before it queued if the head was still waiting on that answer),
// or a lease of this Client holding the key. A Redis that stops answering
// is not contention: a fail-open adapter runs its handler unlocked on
// ErrUnavailable only, and a hung Redis is exactly when it should.
//
// The mixed case — seen held, then a retry (after a notification or the
// fallback timer) that Redis has not answered when the budget ends — is
// ErrNotAcquired (a timeout) that unwraps to the retry's failure. The last
// thing Redis said is that another owner holds the lock; reporting
// ErrUnavailable would let a fail-open caller run against a lock known to
// be held. A Redis error before the budget ends — a go-redis read timeout
// shorter than the budget included — is still ErrUnavailable at once,
// whatever was seen: Redis has failed rather than kept the caller waiting,
// and the caller learns of it instead of waiting out the budget. So with a
// hung Redis after the lock was seen held, which of the I/O timeout and
// the budget ends first decides between the two.
//
// Uncontended, Acquire is one round trip. The caller must Release the lease;
// its Context ends if the lease is lost.
func (c *Client) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lease, error) {
	return c.acquire(ctx, key, false, opts)
}

// TryAcquire makes exactly one attempt and does not queue behind this
// Client's waiters: ErrNotAcquired (a *NotAcquiredError naming the holder)
// when the lock is held.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Lease, error) {
	return c.acquire(ctx, key, true, opts)
}

// Do runs fn holding the lock on key: the classic "execute with lock". fn's
// context is cancelled if the lease is lost (cause ErrLost); the lock is
// released when fn returns or panics. Do returns fn's error, joined with
// ErrLost when the lease was lost while fn ran, or with the release error.
func (c *Client) Do(ctx context.Context, key string, fn func(context.Context) error, opts ...AcquireOption) (err error) {
	l, err := c.Acquire(ctx, key, opts...)
	if err != nil {
		return err
	}
	fctx, stop := l.Bind(ctx)
	defer func() {
		stop()
		relErr := l.Release(context.WithoutCancel(ctx))
		switch {
		case errors.Is(l.Err(), ErrLost):
			err = errors.Join(err, ErrLost)
		case relErr != nil:
			err = errors.Join(err, relErr)
		}
	}()
	return fn(fctx)
}

// acquisition is the state of one acquire call.
type acquisition struct {
	c      *Client
	ctx    context.Context // the caller's
	octx   context.Context // what the Observer returned from AcquireStart
	key    string
	names  redisNames
	cfg    acquireConfig
	info   AcquireInfo
	req    acquireReq
	budget time.Time // zero: one attempt (TryAcquire, NoWait)

	attempts int
	holder   Holder
	last     acquireReply // the last contended reply
	fence    int64
	sent     time.Time // send time of the successful attempt
	grant    *grant    // a lease of this Client handed the lock over (its script may still travel)

	// w is the acquisition's place in the local queue (waits only).
	w *waiter
	// queued: an attempt of this acquisition may have left its queue in
	// the lock's wait queue in Redis; abandoned: the last such attempt was
	// left in flight (its batch still on its way), which a leave of the
	// queue must not overtake.
	queued    bool
	abandoned *abandonedCall
	// place is a reader's place in the lock's order when admitted, which
	// the readers queued behind it in this Client share (keyQueue.pass);
	// placeGranted: the place is its queue's entry's, taken by a grant.
	place        int64
	placeGranted bool
	// writers are the writers queued before this reader that it named
	// (Token 0: none holds yet), so it does not name one again once it
	// holds (contended).
	writers []Holder
}

func (c *Client) acquire(ctx context.Context, key string, try bool, opts []AcquireOption) (*Lease, error) {
	return c.acquireKind(ctx, key, 0, 0, try, acquireConfig{ttl: c.cfg.ttl}, opts)
}

// acquireFrom is acquire with base as the settings opts change.
func (c *Client) acquireFrom(ctx context.Context, key string, try bool, base acquireConfig, opts []AcquireOption) (*Lease, error) {
	return c.acquireKind(ctx, key, 0, 0, try, base, opts)
}

// acquireKind is every acquire of one key: a mutex (m 0), a permit of a
// semaphore of limit (modePermit), or a side of a read/write lock, with
// base as the settings opts change. Every kind waits the same way: in this
// Client's local queue for the key (and side), its head alone asking Redis,
// then in the lock's wait queue in Redis, granted at a release.
func (c *Client) acquireKind(ctx context.Context, key string, m sharedMode, limit int, try bool, base acquireConfig, opts []AcquireOption) (*Lease, error) {
	if err := c.usable(key); err != nil {
		return nil, err
	}
	var n redisNames
	if m == 0 {
		n = c.names(key)
	} else {
		if _, ok := c.b.(*primary); !ok {
			return nil, fmt.Errorf("%w: a %s on a Redlock Client", ErrUnsupported, m.kind())
		}
		if m == modePermit && (limit < 1 || limit > MaxPermits) {
			return nil, fmt.Errorf("%w: a semaphore has 1 to %d permits, got %d", ErrInvalidOption, MaxPermits, limit)
		}
		n = c.sharedNames(key, m)
	}
	cfg, err := acquireConfigFrom(base, opts)
	if err != nil {
		return nil, err
	}
	if outer := c.heldIn(ctx, n.key); outer != nil {
		switch {
		case m != 0: // Reentrant does not apply: a second permit or side would wait for itself
			return nil, fmt.Errorf("%w: %q (%s)", ErrWouldDeadlock, key, m.kind())
		case !cfg.reentrant:
			return nil, fmt.Errorf("%w: %q", ErrWouldDeadlock, key)
		}
		return outer.nest(ctx, cfg.name), nil
	}
	a := &acquisition{} // filled in place: returning it from begin would move it to the heap
	c.begin(a, ctx, key, n, cfg, try, m, limit)
	switch {
	case try:
		err = a.once()
	case cfg.noWait:
		if h, busy := c.localBusy(n); busy {
			// Held or queued for inside this Client, and the holder known:
			// refuse without a round trip, but tell the Observer whom we
			// met, as an attempt would. (With nobody known yet, the one
			// attempt asks Redis: a refusal always names its holder.)
			a.holder = h
			c.obs.Contended(a.octx, a.info, h, 0)
			err = a.notAcquired(h)
		} else {
			err = a.once()
		}
	default:
		err = a.wait()
	}
	return a.end(err)
}

// begin starts one acquire of key (names n) with settings cfg in a: its
// AcquireInfo, the Observer's start and holder metadata, the wait budget
// and the request its attempts send. m and limit: what a shared lock's
// attempts ask for (0, 0 for a mutex).
func (c *Client) begin(a *acquisition, ctx context.Context, key string, n redisNames, cfg acquireConfig, try bool, m sharedMode, limit int) {
	*a = acquisition{c: c, ctx: ctx, key: key, names: n, cfg: cfg}
	a.info = AcquireInfo{Key: key, Name: cfg.name, Wait: cfg.wait, Start: time.Now(), Strategy: "notify", Owner: c.cfg.owner, Kind: m.kind(), Limit: limit}
	switch {
	case try:
		a.info.Strategy = "try"
	case cfg.noWait:
		a.info.Strategy = "nowait"
	case cfg.wait > 0:
		a.budget = a.info.Start.Add(cfg.wait)
	}
	a.octx = c.obs.AcquireStart(ctx, a.info)
	meta := c.obs.HolderMetadata(a.octx, a.info)
	if len(meta) > MaxMetadataLen {
		meta = meta[:MaxMetadataLen]
	}
	a.req = acquireReq{token: newToken(), ttl: cfg.ttl, owner: c.cfg.owner, meta: meta, ownerBoxed: c.ownerArg, mode: m, limit: limit}
}

// end tells the Observer how the acquire ended (err: how it failed) and
// returns the lease when it succeeded.
func (a *acquisition) end(err error) (*Lease, error) {
	c := a.c
	if err != nil {
		c.obs.AcquireEnd(a.octx, a.info, AcquireResult{
			Outcome: Classify(a.ctx, err), Attempts: a.attempts, Waited: time.Since(a.info.Start), Holder: a.holder, Err: err,
		})
		return nil, err
	}
	hctx := c.obs.AcquireEnd(a.octx, a.info, AcquireResult{
		Outcome: OutcomeAcquired, Attempts: a.attempts, Handoff: a.grant != nil, Waited: time.Since(a.info.Start), Token: a.fence,
	})
	return a.lease(hctx)
}

// heldIn returns the lease of this Client on rkey that ctx carries, if any.
func (c *Client) heldIn(ctx context.Context, rkey string) *Lease {
	for l := leaseFrom(ctx); l != nil; l = l.parent {
		if l.c == c && l.names.key == rkey && l.held() {
			return l
		}
	}
	return nil
}

// newToken is the random owner token of one lease (128 bits).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var s [22]byte // base64.RawURLEncoding.EncodedLen(16)
	base64.RawURLEncoding.Encode(s[:], b[:])
	return string(s[:])
}

// once is the single attempt of TryAcquire and NoWait.
func (a *acquisition) once() error {
	ok, err := a.attempt(a.octx)
	if err != nil {
		return err
	}
	if !ok {
		return a.notAcquired(a.holder)
	}
	a.c.localAcquired(a.names, a.asHolder())
	return nil
}

// asHolder describes this acquisition as the local holder, for waiters of
// the same Client (they never ask Redis who holds it).
func (a *acquisition) asHolder() Holder {
	return Holder{Owner: a.c.cfg.owner, Metadata: a.req.meta, TTL: a.cfg.ttl, Token: a.fence}
}

// attempt runs the acquire script once. A reply that arrives after the
// lease's validity (TTL − drift since sending) counts as a failure: the
// lock is given back rather than held on a lease that may be gone.
func (a *acquisition) attempt(ctx context.Context) (bool, error) {
	a.attempts++
	a.req.leave = a.req.wait && a.attempts > 1
	sent := time.Now()
	rep, err := a.c.b.acquire(ctx, a.names, a.req)
	if err != nil {
		if mayHaveRun(err) { // the script may have run: give our token back
			a.c.releaseAfter(a.names, a.req.token, err)
			if a.req.queue != "" { // and it may have queued us in Redis
				a.queued = true
				a.c.inWaitQueue(a.names.queue, true)
				errors.As(err, &a.abandoned) // a leave of the queue must follow it
			}
		}
		return false, a.callErr(ctx, err)
	}
	if !rep.ok {
		rep.holder.Seen = time.Now()
		a.holder, a.last = rep.holder, rep
		a.queued = a.queued || a.req.queue != ""
		a.c.refused(a.names.queue, a.req.queue != "", rep.holder, sent)
		a.contended(rep.holder, a.attempts)
		return false, nil
	}
	if a.queued || a.req.queue != "" {
		// Taking the lock left the wait queue, unless the queue kept a
		// place there for the callers behind this one (requeued).
		a.queued = false
		if rep.requeued {
			a.c.requeued(a.names.queue, sent)
		} else {
			a.c.inWaitQueue(a.names.queue, false)
		}
	}
	if time.Since(sent) >= a.cfg.ttl-a.c.b.drift(a.cfg.ttl) {
		a.c.releaseLater(a.names, a.req.token)
		a.req.token = newToken() // a later attempt must not race the give-back of this one
		if ctxEnded(a.ctx) != nil {
			return false, a.ctxErr()
		}
		// Redis answered (late): never "no answer within the wait budget".
		return false, unavailable("acquire", a.key, fmt.Errorf("%w (%v)", errLateReply, a.cfg.ttl))
	}
	a.fence, a.sent = rep.fence, sent
	if a.req.place == 0 { // a reader that used no pass starts one (keyQueue.pass)
		a.place, a.placeGranted = rep.place, rep.granted
	}
	return true, nil
}

// callErr classifies a failed attempt: the caller's context first, then
// the wait budget if it ended during the call (budgetOver), and otherwise
// Redis failed (ErrUnavailable).
func (a *acquisition) callErr(ctx context.Context, err error) error {
	if errors.Is(err, ErrClosed) { // the Client closed while the call queued
		return ErrClosed
	}
	if ctxEnded(a.ctx) != nil {
		return a.ctxErr()
	}
	if !a.budget.IsZero() && !time.Now().Before(a.budget) {
		return a.budgetOver(err)
	}
	return unavailable("acquire", a.key, err)
}

// budgetOver is the end of a wait whose budget ran out; cause is the error
// of the attempt the budget cut, nil when none was in flight (waiting for a
// notification, or queued behind the head). Whether the lock was seen held
// decides: contention is only reported when something said so. Otherwise
// Redis did not answer in time — a hung or overloaded Redis, not a holder.
func (a *acquisition) budgetOver(cause error) error {
	seen := a.sawHolder()
	switch {
	case seen && cause == nil: // waiting on a known holder
		return a.timeout(nil)
	case seen: // the mixed case: see Acquire
		return a.timeout(&noAnswer{wait: a.cfg.wait, err: cause})
	}
	return unavailable("acquire", a.key, &noAnswer{wait: a.cfg.wait, err: cause})
}

// sawHolder: the lock was seen held during this wait, by its own attempts
// or by its queue (see Client.sawHolder). Only a wait has a budget, so a.w
// is set: its refused attempts count in the queue (Client.refused).
func (a *acquisition) sawHolder() bool { return a.c.sawHolder(a.names.queue, a.w) }

// ctxErr is the error of an acquire that the caller's context ended. A
// call can fail at the context's deadline (go-redis makes it the socket
// deadline) a moment before the context's timer marks it done; that moment
// is waited out, bounded by ctxLag, so that ctx.Err() agrees with the
// error once Acquire returns. The error keeps the context error it settled
// on (ctxEnded), and Classify takes it from there: the Observer's outcome
// and the adapters' answer agree even when ctx.Err() says otherwise or
// nothing yet (a cancel racing the deadline's timer, a timer later than
// ctxLag).
func (a *acquisition) ctxErr() error {
	err := ctxEnded(a.ctx)
	if a.ctx.Err() == nil {
		t := time.NewTimer(ctxLag)
		select {
		case <-a.ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if e := a.ctx.Err(); e != nil { // what ctx.Err() says once it says it, for good
		err = e
	}
	return &ctxEndedError{key: a.key, err: err}
}

// ctxEndedError is an acquire ended by the caller's context: err is
// context.Canceled or context.DeadlineExceeded (see ctxErr).
type ctxEndedError struct {
	key string
	err error
}

func (e *ctxEndedError) Error() string {
	return fmt.Sprintf("lockkit: waiting for %q: %v", e.key, e.err)
}

func (e *ctxEndedError) Unwrap() error { return e.err }

// ctxLag bounds the wait for a context past its deadline to report it.
const ctxLag = time.Second

func (a *acquisition) notAcquired(h Holder) error {
	return &NotAcquiredError{Key: a.key, Holder: h, Waited: time.Since(a.info.Start), Nodes: a.last.quorum, Limit: a.req.limit, Promised: a.promised(h)}
}

// promised: h is the earlier waiter Redis last named to this caller (see
// NotAcquiredError.Promised), not a holder.
func (a *acquisition) promised(h Holder) bool { return a.last.promised && sameHolder(h, a.last.holder) }

// timeout: the lock was seen held and the budget ran out; cause is what
// the attempt the budget cut got (nil when none was in flight).
func (a *acquisition) timeout(cause error) error {
	return &NotAcquiredError{Key: a.key, Holder: a.holder, Waited: time.Since(a.info.Start), Nodes: a.last.quorum, Limit: a.req.limit, Promised: a.promised(a.holder), timeout: true, cause: cause}
}

// errNoAnswer: the wait budget ran out while Redis had not answered the
// acquire's attempt, or, for a waiter queued behind this Client's head,
// the head's.
var errNoAnswer = errors.New("no answer from redis within the wait budget")

// noAnswer is the cause an acquire ends with when its budget cut an
// attempt Redis did not answer: inside ErrUnavailable when no holder was
// seen, inside ErrNotAcquired when one was. It matches errNoAnswer and,
// through err, the call's failure (a net.Error timeout, a QuorumError) —
// but never a context error: the budget's deadline is not the caller's,
// and errors.Is(err, context.DeadlineExceeded) is how callers tell that
// their own context ended. Nor ErrUnavailable: inside ErrNotAcquired it
// must not let a fail-open caller run.
type noAnswer struct {
	wait time.Duration
	err  error // the cut attempt's error; nil for a waiter queued behind the head
}

func (e *noAnswer) Error() string {
	if e.err == nil {
		return fmt.Sprintf("%v (%v) to the attempt this waiter queued behind", errNoAnswer, e.wait)
	}
	return fmt.Sprintf("%v (%v): %v", errNoAnswer, e.wait, e.err)
}

func (e *noAnswer) Is(target error) bool {
	switch target {
	case errNoAnswer:
		return true
	case context.Canceled, context.DeadlineExceeded, ErrUnavailable:
		return false
	}
	return e.err != nil && errors.Is(e.err, target)
}

func (e *noAnswer) As(target any) bool { return e.err != nil && errors.As(e.err, target) }

// wait queues locally, then, as the head, attempts until the lock is held.
func (a *acquisition) wait() (err error) {
	c := a.c
	a.req.wait = true
	w, holder, ok := c.enqueue(a.names, a.req, a.cfg.maxWaiters, a.info.Start, a.info.Name)
	if !ok { // the local queue is full: refused, naming the last holder met if any
		a.holder = holder
		if !holder.Seen.IsZero() {
			c.obs.Contended(a.octx, a.info, holder, 0)
		}
		return a.notAcquired(holder)
	}
	if !holder.Seen.IsZero() { // queued behind a lease of this Client: tell who we wait for
		a.holder = holder
		c.obs.Contended(a.octx, a.info, holder, 0)
	}
	a.w = w
	defer func() {
		if id := c.dequeue(a.names, w, err == nil, a.asHolder(), a.place, a.placeGranted, a.sent); id != "" {
			a.leaveQueue(id)
		}
	}()

	// Attempts run in the Observer's context (Redis client spans nest under
	// the acquire span), bounded by the wait budget too; the same context's
	// end is the budget's signal (await tells it from the caller's).
	var budget <-chan struct{}
	actx := a.octx
	if !a.budget.IsZero() {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(a.octx, a.budget)
		defer cancel()
		budget = actx.Done()
	}
	// 1. Wait for our turn in the local queue, or for the lock handed to us;
	// then say whom we waited for meanwhile.
	by, err := a.await(w.turn, nil, nil, budget)
	if !w.first { // the uncontended acquire skips the queue's holder log (and its lock)
		a.metWhileQueued(w, holder)
	}
	if na, ok := err.(*NotAcquiredError); ok { // timed out in the queue: name the last holder met
		na.Holder = a.holder
	}
	if err != nil {
		return err
	} else if by == byTurn && a.granted(w) {
		return nil
	}

	// 2. Head of the queue: attempt, and between attempts wait for a wake-up:
	// a release message, a (re)confirmation of the subscription, a local
	// release, or the fallback timer (the holder's remaining TTL, for a lost
	// message or a crashed holder). The first failed attempt subscribes; the
	// wake-up of its confirmation triggers the next attempt, so the attempt
	// whose failure makes us wait for a message always follows a confirmed
	// subscription. A reconnect wakes us too: messages may have been lost.
	var wake chan struct{}
	var fallback *time.Timer // made on the first wait: an uncontended acquire needs none
	defer func() {
		if fallback != nil {
			fallback.Stop()
		}
	}()
	arm := func(d time.Duration) <-chan time.Time {
		if fallback == nil {
			fallback = time.NewTimer(d)
		} else {
			fallback.Reset(d)
		}
		return fallback.C
	}
	// A head whose queue the caller before it kept in Redis's wait queue
	// (a shared lock's, see queuedFor) waits for its grant first.
	queued := c.queuedFor(a.names.queue)
	for {
		if err := a.over(budget); err != nil {
			// Turned head as the acquire ended (a select picks any ready
			// case): no attempt, and nothing to give back for it.
			return err
		}
		if !queued {
			// As the head, attempt under the queue's id once it has one: a
			// refusal then queues the process in the lock's wait queue in
			// Redis (never under Redlock, where a grant would need a
			// majority round of its own: canHandoff).
			a.req.queue, a.req.place, a.req.more, a.req.next = c.beforeAttempt(a.names.queue)
			if wake != nil {
				drain(wake)
			}
			drain(w.turn)
			ok, err := a.attempt(actx)
			if errors.Is(err, errLateReply) && ctxEnded(actx) == nil {
				continue // Redis was slow, not taken: try again within the budget
			}
			if err != nil || ok {
				return err
			}
		}
		if wake == nil {
			if wake, err = c.subscribe(a.names); err != nil {
				return err
			}
		}
		retry := c.b.retryDelay(a.last)
		if queued || a.req.queue != "" {
			// Queued in Redis: refresh the entry, and find a grant whose
			// message was lost, before the grant ends (queueRefresh).
			retry = min(retry, queueRefresh(a.cfg.ttl))
			if queued {
				retry, queued = queueRefresh(a.cfg.ttl), false
			}
		}
		by, err := a.await(w.turn, wake, arm(retry), budget)
		switch {
		case err != nil:
			return err
		case by == byTurn && a.granted(w):
			return nil
		case by == byWake:
			if j := c.b.jitter(); j > 0 { // Redlock: spread contenders woken together
				if _, err := a.await(nil, nil, arm(j), budget); err != nil {
					return err
				}
			}
		}
	}
}

// leaveQueue takes this Client's queue (id) out of the lock's wait queue
// in Redis: the caller gave up and was the last of its local queue, and a
// shared lock's entry holds back the callers of other processes (a queued
// writer keeps every new reader out), so it should be gone soon after the
// caller is told it gave up. The caller waits for the leave at most
// leaveWait (a round trip when Redis answers); on a Redis that does not
// answer, the leave goes on in the background (bounded by the release
// timeout) rather than hold a caller that gave up. Returning first is
// safe: the give-back leaves a tombstone, so an attempt of the queue still
// on its way queues nothing, and a grant the queue received meanwhile
// passes on (shared_release.lua). The leave follows the queue's last
// attempt if that one was left in flight in a batch.
func (a *acquisition) leaveQueue(id string) {
	done := a.c.giveBackAfter(a.names, id, a.abandoned)
	t := time.NewTimer(leaveWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// leaveWait bounds how long a caller that gave up waits for its queue to
// leave Redis's wait queue (leaveQueue): a round trip, when Redis answers.
const leaveWait = 250 * time.Millisecond

// metWhileQueued reports the holders w's queue met while w waited behind
// another caller (Contended, attempt 0), once each, but reported: the
// local holder w queued behind, already reported by wait. It runs on the
// acquire's goroutine, like every acquire event.
func (a *acquisition) metWhileQueued(w *waiter, reported Holder) {
	hs := a.c.metWhileQueued(a.names.queue, w)
	for _, h := range hs {
		if !reported.Seen.IsZero() && sameHolder(h, reported) {
			continue
		}
		a.holder = h
		a.contended(h, 0)
	}
}

// contended tells the Observer of h, met at attempt (0: through the local
// queue), unless h is a lease of a writer this acquire named while it was
// queued before it: Redis names a queued writer (Promised) with no token,
// by its owner id and metadata, the request that then holds under a token.
// It is one holder, named once (see Observer.Contended).
func (a *acquisition) contended(h Holder, attempt int) {
	if h.Metadata != "" {
		queuedAs := func(w Holder) bool { return w.Owner == h.Owner && w.Metadata == h.Metadata }
		switch {
		case h.Token == 0 && !slices.ContainsFunc(a.writers, queuedAs):
			a.writers = append(a.writers, h)
		case h.Token != 0 && slices.ContainsFunc(a.writers, queuedAs):
			return
		}
	}
	a.c.obs.Contended(a.octx, a.info, h, attempt)
}

// wokenBy says what ended an await.
type wokenBy uint8

const (
	byTurn  wokenBy = iota // the local queue: our turn, a local release or a grant
	byWake                 // a notification (release message, subscription confirmed)
	byTimer                // the timer given
)

// over returns the error the acquire ends with if it is over already
// (ctx ended, the wait budget ran out, the Client closed), else nil.
func (a *acquisition) over(budget <-chan struct{}) error {
	select {
	case <-a.ctx.Done():
	case <-budget:
	case <-a.c.closing:
	default:
		return nil
	}
	_, err := a.await(nil, nil, nil, budget)
	return err
}

// await blocks until turn, wake or timer fires (a nil channel is not
// listened to), or the acquire is over: ctx ended, the wait budget ran
// out, or the Client closed, each with its own error.
func (a *acquisition) await(turn, wake chan struct{}, timer <-chan time.Time, budget <-chan struct{}) (wokenBy, error) {
	select {
	case <-turn:
		return byTurn, nil
	case <-wake:
		return byWake, nil
	case <-timer:
		return byTimer, nil
	case <-a.ctx.Done():
		return 0, a.ctxErr()
	case <-budget: // the attempt context ended: the budget, or the caller's ctx
		if ctxEnded(a.ctx) != nil {
			return 0, a.ctxErr()
		}
		return 0, a.budgetOver(nil)
	case <-a.c.closing:
		return 0, ErrClosed
	}
}

// errLateReply: the acquire's reply came after the lease's validity; the
// lock was given back. Inside ErrUnavailable.
var errLateReply = errors.New("reply arrived after the lease's validity")

// granted takes a direct hand-off from a releasing lease of this Client.
func (a *acquisition) granted(w *waiter) bool {
	g := a.c.takeGrant(w)
	if g == nil {
		return false
	}
	a.fence, a.sent, a.grant = g.fence, g.sent, g
	return true
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// mayHaveRun: a call that failed with err may still have run on Redis
// (a timeout, a lost reply), so its token must be given back; not when it
// never left this process (a refused dial, a call that waited to share a
// round trip and was never sent, or was failed by Close).
func mayHaveRun(err error) bool {
	return !isDialError(err) && !errors.Is(err, errNotSent) && !errors.Is(err, ErrClosed)
}

// releaseAfter is releaseLater for a token whose call failed with err.
// When the caller left a call that was already sent in a batch, the
// give-back waits for that batch to end, so it cannot reach Redis before
// the call it undoes: several batches can be in flight at once, and the
// give-back's own may go out first. The wait is the batch's, which has a
// deadline (the latest of its callers', see batcher), the same bound Close
// already waits for; a shorter one of its own would let the give-back run
// first, and leave the lock to a token nobody has until its TTL.
func (c *Client) releaseAfter(n redisNames, token string, err error) {
	var ab *abandonedCall
	errors.As(err, &ab)
	c.giveBackAfter(n, token, ab)
}

// releaseLater gives back a token whose acquire may or may not have run
// (timeout, lost reply), best effort and bounded, so the lock is not stuck
// for a whole TTL.
func (c *Client) releaseLater(n redisNames, token string) { c.giveBackAfter(n, token, nil) }

// giveBackAfter gives token back in the background, after ab's batch when
// the token's last call was left in one (bounded by the batch's deadline);
// done closes once the give-back has run.
func (c *Client) giveBackAfter(n redisNames, token string, ab *abandonedCall) (done <-chan struct{}) {
	ch := make(chan struct{})
	c.background(func() {
		defer close(ch)
		if ab != nil {
			<-ab.done
		}
		c.giveBack(n, token)
	})
	return ch
}

// background runs fn on its own goroutine, which Close waits for. Once
// Close has begun waiting, fn still runs (a give-back is never dropped;
// every one is bounded by the release timeout) but untracked: no work may
// be added to a WaitGroup that Wait may be watching, and fn must not run
// on the caller's goroutine, which may hold c.qmu.
func (c *Client) background(fn func()) {
	c.bgMu.Lock()
	if c.bgClosed {
		c.bgMu.Unlock()
		go fn()
		return
	}
	c.bg.Add(1)
	c.bgMu.Unlock()
	go func() {
		defer c.bg.Done()
		fn()
	}()
}

// giveBack releases token, best effort, bounded by the release timeout.
func (c *Client) giveBack(n redisNames, token string) {
	if c.cfg.givenBack != nil {
		c.cfg.givenBack(n.user, token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
	defer cancel()
	if p, shared := c.b.(*primary); shared && n.kind.shared() {
		// Its own id as the releasing queue: a give-back, which leaves a
		// tombstone even when the token or queue held (shared_release.lua).
		_, _, _ = p.releaseShared(ctx, n, token, token)
		return
	}
	_, _ = c.b.release(ctx, n, token, false)
}

// lease builds the Lease of a successful acquisition.
func (a *acquisition) lease(hctx context.Context) (*Lease, error) {
	c := a.c
	l := &Lease{
		c: c, key: a.key, name: a.cfg.name, names: a.names, token: a.req.token, fence: a.fence, mode: a.req.mode,
		noRenew: a.cfg.noRenew, maxHold: a.cfg.maxHold, acquiredAt: time.Now(), parent: leaseFrom(a.ctx), ttl: a.cfg.ttl, idx: -1,
	}
	l.initCtx(hctx)
	if a.grant != nil {
		return c.grantedLease(l, a.grant)
	}
	if !c.ren.add(l, a.sent) { // Close ran meanwhile
		return nil, l.closedAtBirth()
	}
	return l, nil
}

// closedAtBirth ends l, made while Close ran (the renewer refused it):
// the Observer handed out a hold context, which ends; the token goes back.
func (l *Lease) closedAtBirth() error {
	l.state = stateClosed
	l.cancel(ErrClosed)
	l.c.obs.Lost(l.ctx, l.info(), ErrClosed)
	l.c.localRelease(l.names.queue)
	l.releaseLater()
	return ErrClosed
}

// grantedLease schedules l, a lease handed over by a hand-off (g), and
// returns it: with the releaser's deadline and no renewal until the reply
// is in, confirmed at once if it is in already, lost if it said the
// releaser no longer held the lock.
func (c *Client) grantedLease(l *Lease, g *grant) (*Lease, error) {
	l.grant = g
	c.qmu.Lock()
	settled := g.settled
	ok := settled && g.replyOK() // rep and err are written before settled
	var added bool
	if settled && ok {
		added = c.ren.add(l, g.sent)
	} else {
		added = c.ren.addPending(l, g.deadline)
		if added && !settled {
			g.lease = l // finishHandoff confirms or loses it
		}
	}
	c.qmu.Unlock()
	if !added { // Close ran meanwhile
		return nil, l.closedAtBirth()
	}
	if settled && !ok {
		l.lose(ErrLost)
	}
	return l, nil
}
