package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Idempotency records: a request retried with the same idempotency key
// runs once. Client.Claim looks the key's record up and claims it in one
// script (one round trip): the first request claims it and runs; a retry
// that comes while it runs finds it in progress (ErrNotAcquired, as a lock
// held elsewhere), or waits for its answer (ClaimRequest.Wait); a retry
// after it completed gets the stored answer (OutcomeReplayed) without
// taking any lock; a retry with another request under the same key is
// refused (ErrFingerprint), before any of the others is decided.
//
// The claim is a Lease, with every rule of one: renewed while the work
// runs, its Context ended with cause ErrLost when that cannot be
// confirmed, owner-checked, and a fencing token larger than every earlier
// claim's of the record (package fence refuses the older ones). An owner
// that crashed holds the record until the claim's TTL, not the retention:
// the next claim then takes it over (Claim.TakenOver) with a larger token
// and runs again. Lease.Complete stores the answer, fenced by the claim's
// token; Lease.Release abandons the claim (the work failed: the next
// retry runs at once).
//
// What goes in the record is the caller's: core stores the answer and the
// fingerprint as opaque bytes, and the key as given. Package guard builds
// both (status, headers, body; a hash of the request) and a key scoped by
// method, route and tenant.

// DefaultRetention is how long a completed record is kept when
// ClaimRequest.Retention is 0: a day, as the idempotency-key draft and
// Stripe keep one.
const DefaultRetention = 24 * time.Hour

// MaxPayload bounds the answer Lease.Complete stores, in bytes: a record
// is kept for its retention, and Redis holds every one of them in memory.
// A caller that wants a lower bound (package guard does) checks its own
// before Complete.
const MaxPayload = 4 << 20

// MaxFingerprintLen bounds ClaimRequest.Fingerprint, in bytes: it is
// meant to be a hash of the request, not the request.
const MaxFingerprintLen = 1024

// ClaimRequest is one Client.Claim given as values, as Request is for an
// acquire. The zero ClaimRequest claims with the Client's TTL, keeps the
// answer DefaultRetention, and answers a record in progress at once.
type ClaimRequest struct {
	// Name is the low-cardinality telemetry name (a route template, an RPC
	// method), never part of the key.
	Name string
	// TTL is the claim's lease TTL; 0: the Client's (WithTTL). At least
	// MinTTL. A crashed owner's claim is taken over this long after its
	// last renewal.
	TTL time.Duration
	// Retention is how long a completed record (its answer) is kept; 0:
	// DefaultRetention. A claim is remembered as long (at least its TTL),
	// so that the claim that takes it over after a crash knows it.
	Retention time.Duration
	// Fingerprint says what request the key was used for (a hash of it):
	// the same key with another fingerprint is refused with ErrFingerprint,
	// against a live claim, a claim taken over and a completed record
	// alike. Compared as given; at most MaxFingerprintLen bytes.
	Fingerprint string
	// Wait, when above 0, waits up to it for the answer of a record in
	// progress elsewhere, and returns it (OutcomeReplayed), or claims the
	// record if its owner abandons it or crashes meanwhile; then
	// ErrNotAcquired (a timeout). 0 answers a record in progress at once
	// with ErrNotAcquired. The wait is woken by the record's notification
	// (the lock engine's pub/sub: the completion or abandonment publishes
	// it when somebody waits), and, for an owner that crashed, by a timer at
	// its claim's expiry; it never polls.
	Wait time.Duration
	// NoRenew holds the claim until its TTL without renewal (NoRenew).
	NoRenew bool
	// MaxHold bounds how long the claim is held (MaxHold); 0: no bound.
	// Complete after it stores nothing: the claim is released (ErrMaxHold).
	MaxHold time.Duration
	// FailOpen says the caller runs its work without a claim when Redis is
	// unavailable (FailsOpen); Claim then tells the Observer
	// (Observer.Unlocked) as it returns the error, as AcquireRequest does.
	FailOpen bool
}

// Check reports the first value of r that no claim could honour, with an
// error matching ErrInvalidOption: a TTL other than 0 below MinTTL; a
// negative Retention, Wait or MaxHold; a Fingerprint over
// MaxFingerprintLen. Claim checks its ClaimRequest; an adapter checks its
// own once, when it is built.
func (r ClaimRequest) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	if err := (Request{TTL: r.TTL, MaxHold: r.MaxHold}).Check(); err != nil { // the lease's rules
		return err
	}
	switch {
	case r.Retention < 0:
		return bad("Retention must be ≥ 0 (0: the default %v), got %v", DefaultRetention, r.Retention)
	case r.Wait < 0:
		return bad("Wait must be ≥ 0 (0: no wait), got %v", r.Wait)
	case len(r.Fingerprint) > MaxFingerprintLen:
		return bad("Fingerprint is %d bytes, the limit is %d (core.MaxFingerprintLen)", len(r.Fingerprint), MaxFingerprintLen)
	}
	return nil
}

// FailsOpen reports whether a caller that made r runs without a claim
// after err, Claim's error on ctx: only when r.FailOpen and Redis did not
// answer (OutcomeUnavailable), the rule of Request.FailsOpen.
func (r ClaimRequest) FailsOpen(ctx context.Context, err error) bool {
	return Request{FailOpen: r.FailOpen}.FailsOpen(ctx, err)
}

// Claim is what Client.Claim found: the claim, when the caller got it, or
// the stored answer of a completed record.
type Claim struct {
	// Outcome is OutcomeAcquired (the caller holds the claim: Lease) or
	// OutcomeReplayed (the record was completed: Payload).
	Outcome Outcome
	// Lease is the claim (OutcomeAcquired): run the work under its Context
	// (Lease.Bind), then Lease.Complete it with the answer, or
	// Lease.Release it (the work failed; the next retry runs at once).
	Lease *Lease
	// Token is the claim's fencing token (Lease.Token), or, replayed, the
	// token of the claim that stored the answer.
	Token int64
	// TakenOver: the claim took the record over from a claim that expired
	// (its owner crashed or stalled past its TTL) without an answer, so the
	// work may have begun before: fence its writes with Token.
	TakenOver bool
	// Payload is the stored answer (OutcomeReplayed), as Complete got it.
	Payload []byte
}

// Replayed reports whether the record was completed and c carries its
// answer.
func (c Claim) Replayed() bool { return c.Outcome == OutcomeReplayed }

// Claim claims the idempotency record of key, or finds its answer, in one
// round trip (see the package's Idempotency records above). It returns
//   - a Claim with a Lease (OutcomeAcquired) when the caller claimed it: the
//     caller runs the work, then Lease.Complete or Lease.Release;
//   - a Claim with the stored Payload (OutcomeReplayed) when the record was
//     completed with r's Fingerprint;
//   - an error matching ErrFingerprint (OutcomeMismatch) when the record
//     holds another fingerprint, whether it is completed, claimed, or
//     claimed and expired;
//   - a *NotAcquiredError (ErrNotAcquired, OutcomeContended; OutcomeTimeout
//     when r.Wait ran out) when another owner's claim is live: its Holder
//     names the owner, Holder.TTL is what is left of its claim, the hint
//     for a retry;
//   - the errors of an acquire otherwise: ErrUnavailable (Redis failed or
//     did not answer: fail-closed, unless r.FailOpen, which tells the
//     Observer), ctx's, ErrInvalidKey, ErrInvalidOption, ErrClosed, and
//     ErrUnsupported on a Redlock Client.
//
// The Observer hears a claim as an acquire of Kind KindClaim
// (AcquireStart, Contended, AcquireEnd with the outcome; TakenOver in
// AcquireResult), and its lease as any other.
func (c *Client) Claim(ctx context.Context, key string, r ClaimRequest) (Claim, error) {
	if err := r.Check(); err != nil {
		return Claim{}, err
	}
	if err := c.usable(key); err != nil {
		return Claim{}, err
	}
	p, ok := c.b.(*primary)
	if !ok {
		return Claim{}, fmt.Errorf("%w: idempotency records on a Redlock Client", ErrUnsupported)
	}
	names := c.recordNames(key)
	if c.heldIn(ctx, names.key) != nil { // its own claim would answer "in progress", or wait on itself
		return Claim{}, fmt.Errorf("%w: %q", ErrWouldDeadlock, key)
	}
	cl := claiming{c: c, p: p, ctx: ctx, key: key, names: names, r: r, ttl: c.cfg.ttl, retention: DefaultRetention}
	if r.TTL != 0 {
		cl.ttl = r.TTL
	}
	if r.Retention != 0 {
		cl.retention = r.Retention
	}
	cl.info = AcquireInfo{Key: key, Name: r.Name, Strategy: "nowait", Start: time.Now(), Owner: c.cfg.owner, Kind: KindClaim}
	if r.Wait > 0 {
		cl.info.Strategy, cl.info.Wait = "notify", r.Wait
		cl.budget = cl.info.Start.Add(r.Wait)
	}
	cl.octx = c.obs.AcquireStart(ctx, cl.info)
	cl.meta = c.obs.HolderMetadata(cl.octx, cl.info)
	if len(cl.meta) > MaxMetadataLen {
		cl.meta = cl.meta[:MaxMetadataLen]
	}
	cl.token = newToken()
	res, err := cl.run()
	return cl.end(res, err)
}

// recordNames is the Redis names of key's idempotency record: one hash,
// so one cluster slot (keys.go).
func (c *Client) recordNames(key string) redisNames {
	n := c.namesIn(key, "i:", "ih:")
	n.kind = kindRecord
	return n
}

// claiming is the state of one Claim call.
type claiming struct {
	c         *Client
	p         *primary
	ctx, octx context.Context
	key       string
	names     redisNames
	r         ClaimRequest
	ttl       time.Duration
	retention time.Duration
	info      AcquireInfo
	meta      string
	token     string
	budget    time.Time // zero: one attempt
	attempts  int
	holder    Holder // the last owner seen in progress
	sent      time.Time
}

// claimReply is claim.lua's answer.
type claimReply struct {
	state     claimState
	fence     int64
	takenOver bool
	payload   []byte
	holder    Holder // claimInProgress
}

type claimState uint8

const (
	claimInProgress claimState = iota
	claimClaimed
	claimCompleted
	claimMismatch
)

// run attempts, and while the record is in progress and the wait budget
// lasts, waits for its notification or its claim's expiry and attempts
// again.
func (cl *claiming) run() (claimReply, error) {
	var (
		wake  chan struct{}
		sub   waitSub
		timer *time.Timer
	)
	defer func() {
		if sub != nil {
			sub.unsubscribe()
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	actx := cl.octx
	var budget <-chan struct{}
	if !cl.budget.IsZero() {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(cl.octx, cl.budget)
		defer cancel()
		budget = actx.Done()
	}
	for {
		if wake != nil {
			drain(wake)
		}
		rep, err := cl.attempt(actx)
		if errors.Is(err, errLateReply) && !cl.budget.IsZero() && ctxEnded(actx) == nil {
			continue // Redis was slow, not taken: try again within the budget (as Acquire)
		}
		if err != nil || rep.state != claimInProgress {
			return rep, err
		}
		if budget == nil {
			return rep, cl.notAcquired(false)
		}
		if sub == nil {
			// Subscribed after the refusal that flagged the record: the
			// confirmation wakes this loop, whose next attempt then follows
			// it, so an answer stored meanwhile is not missed (as Acquire).
			wake = make(chan struct{}, 1)
			if sub, err = cl.c.b.notifications().subscribe(cl.names.channel, wake, ""); err != nil {
				return rep, err
			}
		}
		d := cl.p.retryDelay(acquireReply{holder: rep.holder}) // a crashed owner's claim expires by then
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-cl.ctx.Done():
			return rep, cl.ctxErr()
		case <-budget:
			if ctxEnded(cl.ctx) != nil {
				return rep, cl.ctxErr()
			}
			return rep, cl.notAcquired(true)
		case <-cl.c.closing:
			return rep, ErrClosed
		}
	}
}

// attempt runs claim.lua once.
func (cl *claiming) attempt(ctx context.Context) (claimReply, error) {
	c := cl.c
	cl.attempts++
	sent := time.Now()
	waits := !cl.budget.IsZero()
	rep, err := cl.p.claim(ctx, cl.names, cl.token, cl.ttl, c.ownerArg, cl.meta, cl.r.Fingerprint, cl.retention, waits, waits && cl.attempts > 1)
	if err != nil {
		if mayHaveRun(err) { // the claim may have been taken: give it back
			c.releaseAfter(cl.names, cl.token, err)
		}
		return claimReply{}, cl.callErr(err)
	}
	switch rep.state {
	case claimInProgress:
		rep.holder.Seen = time.Now()
		cl.holder = rep.holder
		c.obs.Contended(cl.octx, cl.info, rep.holder, cl.attempts)
	case claimClaimed:
		if time.Since(sent) >= cl.ttl-c.b.drift(cl.ttl) {
			c.releaseLater(cl.names, cl.token)
			cl.token = newToken() // a later attempt must not race the give-back of this one
			if ctxEnded(cl.ctx) != nil {
				return claimReply{}, cl.ctxErr()
			}
			return claimReply{}, unavailable("claim", cl.key, fmt.Errorf("%w (%v)", errLateReply, cl.ttl))
		}
		cl.sent = sent
	}
	return rep, nil
}

// callErr classifies a failed attempt as acquisition.callErr does: the
// caller's context first, then the wait budget (a holder seen: a timeout;
// none: Redis did not answer), and otherwise Redis failed.
func (cl *claiming) callErr(err error) error {
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	if ctxEnded(cl.ctx) != nil {
		return cl.ctxErr()
	}
	if !cl.budget.IsZero() && !time.Now().Before(cl.budget) {
		if !cl.holder.Seen.IsZero() {
			na := cl.notAcquired(true).(*NotAcquiredError)
			na.cause = &noAnswer{wait: cl.r.Wait, err: err}
			return na
		}
		return unavailable("claim", cl.key, &noAnswer{wait: cl.r.Wait, err: err})
	}
	return unavailable("claim", cl.key, err)
}

// ctxErr is the error of a claim its caller's context ended (see
// acquisition.ctxErr, whose rule it shares).
func (cl *claiming) ctxErr() error {
	a := acquisition{ctx: cl.ctx, key: cl.key}
	return a.ctxErr()
}

// notAcquired is the error of a record in progress elsewhere; timeout:
// the wait budget ran out.
func (cl *claiming) notAcquired(timeout bool) error {
	return &NotAcquiredError{Key: cl.key, Holder: cl.holder, Waited: time.Since(cl.info.Start), timeout: timeout}
}

// end tells the Observer how the claim ended and returns what it found.
func (cl *claiming) end(rep claimReply, err error) (Claim, error) {
	c := cl.c
	if err == nil && rep.state == claimMismatch {
		err = fmt.Errorf("lockkit: claim %q: %w", cl.key, ErrFingerprint)
	}
	if err != nil {
		c.obs.AcquireEnd(cl.octx, cl.info, AcquireResult{
			Outcome: Classify(cl.ctx, err), Attempts: cl.attempts, Waited: time.Since(cl.info.Start), Holder: cl.holder, Err: err,
		})
		if cl.r.FailsOpen(cl.ctx, err) {
			c.obs.Unlocked(cl.ctx, cl.info, err)
		}
		return Claim{}, err
	}
	if rep.state == claimCompleted {
		c.obs.AcquireEnd(cl.octx, cl.info, AcquireResult{
			Outcome: OutcomeReplayed, Attempts: cl.attempts, Waited: time.Since(cl.info.Start), Token: rep.fence,
		})
		return Claim{Outcome: OutcomeReplayed, Token: rep.fence, Payload: rep.payload}, nil
	}
	hctx := c.obs.AcquireEnd(cl.octx, cl.info, AcquireResult{
		Outcome: OutcomeAcquired, Attempts: cl.attempts, Waited: time.Since(cl.info.Start), Token: rep.fence, TakenOver: rep.takenOver,
	})
	l := &Lease{
		c: c, key: cl.key, name: cl.r.Name, names: cl.names, token: cl.token, fence: rep.fence,
		noRenew: cl.r.NoRenew, maxHold: cl.r.MaxHold, acquiredAt: time.Now(), parent: leaseFrom(cl.ctx), ttl: cl.ttl, idx: -1,
		retention: cl.retention,
	}
	l.initCtx(hctx)
	if !c.ren.add(l, cl.sent) { // Close ran meanwhile
		return Claim{}, l.closedAtBirth()
	}
	return Claim{Outcome: OutcomeAcquired, Lease: l, Token: rep.fence, TakenOver: rep.takenOver}, nil
}
