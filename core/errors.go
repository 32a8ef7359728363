package core

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Every exported error of package core is in this file: the sentinels, which
// every error the engine returns matches with errors.Is (or it matches the
// caller's ctx.Err()), and the concrete types behind them, which say more
// (errors.As).

// Sentinel errors.
var (
	// ErrNotAcquired: the lock was seen held and the caller did not get it:
	// at the single attempt of NoWait / TryAcquire, by a lease of this
	// Client, with the local queue full (MaxWaiters), or when the wait
	// budget ran out after the lock was seen held during the wait. Seen
	// means something said so — Redis's answer to an attempt (this caller's,
	// or that of the head of this Client's queue it waited behind) or a
	// local holder —, never merely a Redis that did not answer: that is
	// ErrUnavailable. The concrete error is a *NotAcquiredError that says
	// who held it.
	//
	// One mixed case stays here: seen held, then a retry Redis has not
	// answered when the budget ends. A fail-open caller runs unlocked on
	// ErrUnavailable, and must not do so against a lock last known held;
	// the *NotAcquiredError then unwraps to the retry's failure.
	ErrNotAcquired = errors.New("lockkit: lock held by another owner")

	// ErrLost: the lease could no longer be confirmed (renewal found another
	// owner, or the local deadline passed without a confirmed renewal). It is
	// the context.Cause of Lease.Context() once lost.
	ErrLost = errors.New("lockkit: lease lost")

	// ErrMaxHold: the lease was held for its maximum hold (MaxHold). It is
	// the context.Cause of Lease.Context() from then on: the holder must
	// stop, for the lease is no longer renewed and the lock expires within
	// one TTL (or at the holder's Release, whichever comes first).
	ErrMaxHold = errors.New("lockkit: lease held for its maximum hold")

	// ErrNotHeld: Release or Extend of a lease this owner no longer holds
	// (already released, lost, or expired on the server).
	ErrNotHeld = errors.New("lockkit: lease not held")

	// ErrInvalidKey: empty key, key over MaxKeyLen, or a key part that is
	// missing or empty.
	ErrInvalidKey = errors.New("lockkit: invalid lock key")

	// ErrKeyConfig: the server built a key from a source it configured wrongly
	// (a path parameter its route lacks, a message field that does not
	// exist). Unlike ErrInvalidKey it is the server's mistake, not the
	// caller's: adapters answer it with 500 / Internal. A custom key part
	// (an adapter's Func) returns an error wrapping it for such a mistake.
	ErrKeyConfig = errors.New("lockkit: key source misconfigured")

	// ErrInvalidOption: an option that makes no sense: a TTL ≤ 0 or below
	// MinTTL, a negative wait budget, an empty or braced prefix, options that
	// contradict each other or do not fit the backend.
	ErrInvalidOption = errors.New("lockkit: invalid option")

	// ErrUnavailable: Redis could not be reached or answered with an error
	// (connection refused, timeout, LOADING, READONLY, CLUSTERDOWN, ...), or
	// did not answer within the wait budget while nobody was seen holding
	// the lock (the cause then says "no answer from redis within the wait
	// budget"; a waiter queued behind this Client's head counts the head's
	// unanswered attempt). The error wraps the cause.
	ErrUnavailable = errors.New("lockkit: redis unavailable")

	// ErrWouldDeadlock: the context already holds this key and Reentrant was
	// not asked for; waiting would wait for ourselves.
	ErrWouldDeadlock = errors.New("lockkit: context already holds this lock (use Reentrant to nest)")
	// ErrUnsupported: the Client's backend cannot do what was asked: a
	// semaphore or a read/write lock on a Redlock Client (a permit would
	// need a majority's count of holders, which independent masters do not
	// share).
	ErrUnsupported = errors.New("lockkit: not supported by this Client")

	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("lockkit: client closed")

	// ErrBadRedisClient: New or NewRedlock got a Redis client the engine
	// cannot use (nil, without ContextTimeoutEnabled, a Ring; for Redlock no
	// node, or one master given twice).
	ErrBadRedisClient = errors.New("lockkit: unusable redis client")

	// ErrFingerprint: Client.Claim found the idempotency key's record made
	// by another request (another ClaimRequest.Fingerprint): the client
	// reused a key for a different request. Classify makes it
	// OutcomeMismatch (HTTP 422).
	ErrFingerprint = errors.New("lockkit: idempotency key used for another request")

	// ErrTooLarge: Lease.Complete got an answer over MaxPayload; it stored
	// nothing and released the claim.
	ErrTooLarge = errors.New("lockkit: answer too large to store")

	// ErrReplicaAck: fewer replicas than WithReplicaAck asks for acknowledged a
	// write in time. It comes wrapped in ErrUnavailable.
	ErrReplicaAck = errors.New("lockkit: not enough replicas acknowledged")
)

// Holder describes who holds a lock, as stored next to it by the holder.
type Holder struct {
	// Owner is the holder's owner id (WithOwner; hostname:pid by default).
	Owner string
	// Metadata is what the holder's Observer stored (e.g. its trace context).
	Metadata string
	// TTL is the lock's remaining time to live on the server when it was read.
	// With renewal it stays near the full TTL, so it is no guide for retrying.
	TTL time.Duration
	// Token is the holder's fencing token.
	Token int64
	// Seen is when this process learned of this holder: the reply of Redis
	// that named it, or the moment a lease of this Client took the lock.
	// Zero when no holder is known.
	Seen time.Time
}

// NotAcquiredError is the concrete error behind ErrNotAcquired.
type NotAcquiredError struct {
	Key    string
	Holder Holder // the last holder seen; zero when unknown
	// Waited is how long the caller waited before giving up.
	Waited time.Duration

	// Nodes (Redlock only) names the nodes that refused or failed.
	Nodes *QuorumError
	// Limit is the semaphore's number of permits when every one of them was
	// held or promised; 0 for the other kinds of lock. Classify makes it
	// OutcomeLimited.
	Limit int
	// Promised: what stood in the way was not a holder at work but an
	// earlier waiter: a permit or side that a release granted to another
	// process's queue (Holder names that process's owner id), or, for a
	// reader, a writer queued before it (first come, first served).
	Promised bool

	timeout bool  // the wait budget ran out (rather than a single attempt failing)
	cause   error // the mixed case: the retry the budget cut unanswered; see ErrNotAcquired
}

// Timeout reports whether the wait budget ran out, as opposed to a single
// attempt (NoWait, TryAcquire) or a full local queue (MaxWaiters).
func (e *NotAcquiredError) Timeout() bool { return e.timeout }

func (e *NotAcquiredError) Error() string {
	msg := fmt.Sprintf("lockkit: lock %q held by another owner", e.Key)
	switch {
	case e.Limit > 0 && e.Promised:
		msg = fmt.Sprintf("lockkit: all %d permits of %q held, the last one freed promised to an earlier waiter (%s)", e.Limit, e.Key, e.Holder.Owner)
	case e.Promised:
		msg = fmt.Sprintf("lockkit: lock %q goes to an earlier waiter first (%s)", e.Key, e.Holder.Owner)
	case e.Limit > 0:
		msg = fmt.Sprintf("lockkit: all %d permits of %q held", e.Limit, e.Key)
		if e.Holder.Owner != "" {
			msg += fmt.Sprintf(" (one by %s; the first can expire in %v)", e.Holder.Owner, e.Holder.TTL.Round(time.Millisecond))
		}
	case e.Holder.Owner != "":
		msg = fmt.Sprintf("lockkit: lock %q held by %s (ttl %v)", e.Key, e.Holder.Owner, e.Holder.TTL.Round(time.Millisecond))
	}
	if e.Nodes != nil {
		msg += " (" + e.Nodes.Error() + ")"
	}
	if e.cause != nil {
		msg += "; then " + e.cause.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

// Unwrap returns, when the wait budget cut a retry Redis had not answered
// after the lock was seen held, that retry's failure (never a context
// error, and never ErrUnavailable); nil otherwise.
func (e *NotAcquiredError) Unwrap() error { return e.cause }

// unavailable wraps a Redis failure so it matches ErrUnavailable and its cause.
func unavailable(op, key string, cause error) error {
	return &UnavailableError{Op: op, Key: key, Err: cause}
}

// UnavailableError is the concrete error behind ErrUnavailable.
type UnavailableError struct {
	Op  string // acquire, release, extend, inspect, ...
	Key string
	Err error // the Redis or network error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("lockkit: %s %q: redis unavailable: %v", e.Op, e.Key, e.Err)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// KeyPartError says which part of a key is missing, empty or unreadable: a
// part given to JoinKey, or a part an adapter read from a request (then
// Source and Name say which, e.g. "param" "id"). It matches ErrInvalidKey
// (adapters answer 400 / InvalidArgument), unless the part's error matches
// ErrKeyConfig: then it is the server's mistake and matches only that (500 /
// Internal).
type KeyPartError struct {
	Index        int    // the part's position, from 0
	Source, Name string // empty when built by JoinKey
	Reason       string // "empty", "missing or empty", "unreadable", "misconfigured"
	Err          error  // the part's error, if any
}

func (e *KeyPartError) Error() string {
	what := fmt.Sprintf("part %d", e.Index)
	if e.Source != "" {
		what = fmt.Sprintf("%s %q", e.Source, e.Name)
	}
	msg := fmt.Sprintf("lockkit: invalid lock key: %s is %s", what, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrInvalidKey) true for a caller's mistake.
func (e *KeyPartError) Is(target error) bool {
	return target == ErrInvalidKey && !errors.Is(e.Err, ErrKeyConfig)
}

// Unwrap returns the error of the part's getter, if any.
func (e *KeyPartError) Unwrap() error { return e.Err }

// NodeError is one node's failure in Redlock mode.
type NodeError struct {
	Addr string
	Err  error
}

func (e NodeError) Error() string { return e.Addr + ": " + e.Err.Error() }
func (e NodeError) Unwrap() error { return e.Err }

// QuorumError says why a Redlock call did not reach a majority: which
// nodes refused (held by another owner) and which failed (unreachable,
// timeout, error). Inside ErrUnavailable when too many failed to reach a
// majority; attached to *NotAcquiredError (Nodes) when others held it.
type QuorumError struct {
	Op      string
	Granted int
	Need    int
	Refused []string
	Failed  []NodeError
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d nodes needed", e.Op, e.Granted, e.Need)
	if len(e.Refused) > 0 {
		fmt.Fprintf(&b, "; held by another on %s", strings.Join(e.Refused, ", "))
	}
	for i, f := range e.Failed {
		if i == 0 {
			b.WriteString("; failed: ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(f.Error())
	}
	return b.String()
}

// Unwrap returns the node failures (errors.Is sees through them).
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f
	}
	return errs
}
