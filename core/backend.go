package core

import (
	"context"
	"time"
)

// backend is what the engine needs from Redis. The single-primary backend
// (primary.go) runs each operation as one script on one server; a Redlock
// quorum implements the same interface over several independent masters, so
// neither the public API nor the adapters change with the backend.
type backend interface {
	// acquire runs one attempt with req's owner token, TTL, owner id and
	// metadata; the reply says whether it got the lock, with its fencing
	// token, or who holds it. The caller notes the local time it sent the
	// attempt, from which it computes the lease's local deadline.
	acquire(ctx context.Context, n redisNames, req acquireReq) (acquireReply, error)
	// release removes the lease if token still owns it; false: it did not.
	// keepExpiry: the lock's expiry is known to lie between fenceKeepMin
	// and 3×fenceKeep from now (Lease.keepsExpiry), so the script leaves it.
	release(ctx context.Context, n redisNames, token string, keepExpiry bool) (released bool, err error)
	// handoffs passes the lock along the hand-offs gs, in their order: each
	// from the owner token g.from straight to the waiter g.w, in one step.
	// It records each one's reply in it (rep, err); rep.ok is false when
	// g.from did not hold the lock. Only when canHandoff.
	handoffs(ctx context.Context, n redisNames, gs []*grant)
	canHandoff() bool
	// extend resets the TTL if token still owns it; false: it did not.
	extend(ctx context.Context, n redisNames, token string, ttl time.Duration) (bool, error)
	// renew extends a batch of leases in as few round trips as it can.
	renew(ctx context.Context, batch []renewal)
	forceRelease(ctx context.Context, n redisNames) (bool, error)
	inspect(ctx context.Context, n redisNames) (Holder, bool, error)
	// notifications returns the release notifications of this backend.
	notifications() notifier
	// retryDelay is how long a waiter whose attempt got rep trusts
	// notifications before retrying on its own.
	retryDelay(rep acquireReply) time.Duration
	// jitter delays a retry after a notification (0 for a single primary;
	// Redlock spreads contenders so they do not split votes in lockstep).
	jitter() time.Duration
	// drift is the clock-drift allowance subtracted from a lease's validity.
	drift(ttl time.Duration) time.Duration
	close()
}

type acquireReq struct {
	token string
	ttl   time.Duration
	owner string
	meta  string
	// owner as a script argument, boxed once per Client (nil: box owner).
	ownerBoxed any
	// mode and limit: what a shared lock's attempt asks for (shared.go):
	// a permit of limit, the read side or the write side.
	mode  sharedMode
	limit int
	// wait: the attempt is a waiter's (Acquire's head), not TryAcquire's
	// or NoWait's. A refused Redlock waiter then asks for the release
	// message (notifyOnly).
	wait bool
	// queue is the id of the caller Client's local queue for the lock, under
	// which the lock's wait queue in Redis knows it ("" for a caller that
	// does not queue: TryAcquire, NoWait, and a queue's attempts until one
	// meets the lock held; notifyOnly for a Redlock waiter).
	queue string
	// place (the read side) is the pass of the reader admitted at the head
	// of the caller's local queue, which the callers queued behind it share
	// (keyQueue.pass); 0: none. more (shared locks): callers of the same
	// local queue wait behind this one, so its queue keeps its place in the
	// lock's wait queue once this caller is in, described by next, the
	// holder metadata of the first of them: the caller that takes the next
	// grant to the queue, whom a refused caller is told of until then.
	place int64
	more  bool
	next  string
	// leave: the caller may leave while this attempt is in flight (a
	// waiter's attempt after its first), so the call goes where a caller
	// can leave it (batcher.process), and a Redis that hangs holds no
	// caller that gave up. The first attempt, every uncontended acquire's,
	// stays on the direct path.
	leave bool
}

// notifyOnly is the queue id of a waiter that has no place in the lock's
// wait queue (Redlock): its refusal only flags the lock, so that the
// release announces itself (release.lua publishes nothing when nobody waits).
const notifyOnly = "*"

func (r *acquireReq) ownerArg() any {
	if r.ownerBoxed != nil {
		return r.ownerBoxed
	}
	return r.owner
}

type acquireReply struct {
	ok     bool
	fence  int64
	holder Holder // when !ok
	// queued (handoff only): other processes' waiters are in the lock's
	// wait queue, so the run of local hand-offs ends soon.
	queued bool
	// place (the read side, acquired): the reader's place in the lock's
	// order, for the pass of the readers queued behind it in this Client;
	// requeued (shared locks, acquired): the caller's queue is in the
	// lock's wait queue for the callers behind it (acquireReq.more).
	place    int64
	requeued bool
	// granted (shared locks, acquired): the attempt took a grant to its
	// queue; place is then that queue's entry's.
	granted bool
	// promised (shared locks, refused): what stood in the way was a grant
	// to an earlier waiter (holder names its process) or, for a reader, a
	// writer queued before it, not a holder at work.
	promised bool
	// Redlock only: which nodes refused, and whether nobody held a majority.
	quorum *QuorumError
	split  bool
}

type renewal struct {
	names redisNames
	token string
	ttl   time.Duration
	// results
	ok  bool
	err error
}

// notifier delivers "this lock was released" wake-ups for channels.
type notifier interface {
	// subscribe takes a reference on channel's notifications; wake is poked
	// on every release message and every (re)confirmation of the subscription.
	subscribe(channel string, wake chan struct{}, id string) (waitSub, error)
	close()
}

// waitSub is one subscription held by a local queue. Whether the server
// confirmed it is not asked: every (re)confirmation pokes the wake channel,
// and the waiter attempts again on every poke, so its last failing attempt
// always follows a confirmation.
type waitSub interface {
	unsubscribe()
}
