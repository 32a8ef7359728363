package core

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Hand-off and wait-queue limits.
const (
	// maxStreak bounds direct hand-offs in a row inside one process while no
	// other process is known to wait (see keyQueue.remote); then the lock is
	// released publicly.
	maxStreak = 16
	// grantTTLMax caps how long a release's grant waits for the grantee's
	// confirming attempt: what a grantee that died costs the others.
	grantTTLMax = 2 * time.Second
	// queueRefreshMax caps how long the head of a queue in Redis's wait
	// queue goes without an attempt: each attempt refreshes its entry, and
	// one that missed a grant's message finds the grant by it.
	queueRefreshMax = 1500 * time.Millisecond
)

// grantTTL is the TTL of a grant to a waiter whose lease TTL is ttl: never
// longer than the lease it becomes, so a dead grantee never blocks the lock
// longer than a crashed holder would.
func grantTTL(ttl time.Duration) time.Duration { return min(ttl, grantTTLMax) }

// queueRefresh is how often the head of a queue waiting in Redis attempts
// at least: half the grant TTL or less, so the grantee's own attempt comes
// before its grant ends even when the message was lost. Its entry lives
// three times as long.
func queueRefresh(ttl time.Duration) time.Duration { return min(queueRefreshMax, ttl/2) }

// Script arguments of the usual case (TTL of 3s or more), boxed once so an
// attempt allocates nothing for them.
var (
	queueLifeMaxMs any = ms(3 * queueRefreshMax)
	grantTTLMaxMs  any = ms(grantTTLMax)
)

// queueArgs are acquire.lua's entry lifetime and grant TTL (ms) for a
// lease TTL of ttl.
func queueArgs(ttl time.Duration) (life, grant any) {
	if ttl >= 2*queueRefreshMax && ttl >= grantTTLMax {
		return queueLifeMaxMs, grantTTLMaxMs
	}
	return ms(3 * queueRefresh(ttl)), ms(grantTTL(ttl))
}

// keyQueue is this Client's local FIFO for one lock. Only the head talks to
// Redis, and only while no lease of this Client holds the lock, so a hot key
// costs Redis O(1) commands per hand-off however many goroutines wait. When
// a lease of this Client releases with a waiter queued, the lock is handed
// to that waiter in one script (no second round trip, nobody else woken),
// and the waiter starts at once, while the script travels (grant): the
// round trip is off the lock's critical path.
//
// Across processes, the head's refused attempt puts the queue (its id) in
// the lock's wait queue in Redis, one entry per process; a release grants
// the lock to the first entry (release.lua). While others wait there (the
// hand-off's reply says so), a run of local hand-offs ends once each local
// waiter of the run's start had its turn, and the lock goes to the next
// process: bounded unfairness, with one notification hop per process turn
// instead of one per cycle. Fields are guarded by Client.qmu.
type keyQueue struct {
	// id names this queue in the lock's wait queue in Redis; a grant makes
	// it the lock's owner until the head's attempt confirms it. Made when
	// an attempt first meets the lock held (refused).
	id    string
	names redisNames
	// inRedis: the queue may have an entry in Redis (a refused or failed
	// attempt of the head); when its last waiter leaves, it leaves there
	// too, giving back a grant it may have received.
	inRedis bool
	waiters []*waiter
	held    int // leases of this Client holding the lock (0 or 1 unless one was lost unnoticed)
	// holder is the last holder the queue met (at moment seen): the local
	// holder while held > 0, else the holder Redis last named to an
	// attempt. Local refusals and waiters' telemetry name it.
	holder Holder
	// met logs the holders met for waiters that queue behind others: made
	// when the first such waiter queues (the uncontended acquire needs
	// none), bounded (MaxQueuedHolders).
	met    *holderLog
	streak int // direct hand-offs in a row
	// run is the length of the current run of hand-offs while others wait
	// in Redis: the local waiters queued at its first hand-off. remote: the
	// last hand-off's reply said other processes wait.
	run    int
	remote bool
	// The line of hand-offs in Redis (sendHops): sending, a batch of this
	// lock's hand-off scripts is on its way; hops, those granted since, in
	// order, which go as the next batch once its reply is in. A receiver
	// can hand on before its own hand-off's reply: its script follows the
	// one that gives it the lock on the same connection.
	sending bool
	hops    []*grant
	// sub is the notification subscription shared by successive heads while
	// the queue has waiters, so a hand-off inside the process does not
	// resubscribe.
	sub waitSub
	// wake is poked by notifications for this key (release messages and
	// subscription confirmations); the head waits on it. Made on the first
	// subscription: an uncontended acquire needs none.
	wake chan struct{}
	// pass is the place of the last reader admitted at the head of a read
	// side's queue; the passLeft callers queued behind it then may use it
	// (beforeAttempt): they go in before any writer that queued after it,
	// as readers that waited before a writer do.
	pass     int64
	passLeft int
	// placedAt is when the attempt that gave the queue its entry (and
	// place) in Redis's wait queue was sent (about; zero when unknown).
	placedAt time.Time
	// skip: the last caller to go in kept the queue's place in Redis's
	// wait queue (requeued) and nothing was freed for it since; the next
	// head waits for its grant before it asks (queuedFor).
	skip bool
	// w0 and buf hold the first waiter of a new queue and the waiters'
	// first slot, so the uncontended acquire allocates the queue once.
	w0  waiter
	buf [1]*waiter
	// seen counts the moments a holder was seen while the queue existed: an
	// attempt that Redis answered "held", a lease of this Client taking the
	// lock (by a hand-off too). contended: the last answered attempt said "held" and the head
	// has not asked again since (it waits for a notification on that
	// knowledge). Together they tell a waiter whose budget ended whether
	// the lock was seen held during its wait, or whether Redis simply never
	// answered the head (sawHolder).
	seen      uint64
	contended bool
}

// holderLog is a ring of the last MaxQueuedHolders holders a queue met,
// each with the moment (keyQueue.seen) it was last met. A waiter reports
// those met since it queued when its local wait ends; the head's own
// attempts report theirs directly.
type holderLog struct {
	e [MaxQueuedHolders]loggedHolder
	n uint64 // entries ever added
}

type loggedHolder struct {
	seq uint64
	h   Holder
}

// add logs h met at moment seq; a holder met again right after itself
// only moves its entry's moment (its Seen stays when it was first met).
func (l *holderLog) add(seq uint64, h Holder) {
	if l.n > 0 {
		if last := &l.e[(l.n-1)%MaxQueuedHolders]; sameHolder(last.h, h) {
			last.seq = seq
			return
		}
	}
	l.e[l.n%MaxQueuedHolders] = loggedHolder{seq: seq, h: h}
	l.n++
}

// sameHolder: one lease, as telemetry tells holders apart.
func sameHolder(a, b Holder) bool { return a.Token == b.Token && a.Owner == b.Owner }

type waiter struct {
	// turn gets a value when the waiter becomes the head with the lock not
	// held locally, when a local holder releases, and when it is granted
	// the lock by a direct hand-off.
	turn chan struct{}
	req  acquireReq
	// grant: a releasing lease of this Client handed it the lock (the
	// hand-off's reply may still be on its way).
	grant *grant
	// seen0 is the queue's seen count when the waiter queued; heldAtStart:
	// a holder was known then (a lease of this Client, or the head waiting
	// on a "held" answer).
	seen0       uint64
	heldAtStart bool
	since       time.Time // when it queued (Client.Locks)
	name        string    // the caller's telemetry name, Name (Client.Locks)
	// first: its turn came as it queued (nobody ahead, nothing held here),
	// so it met no holder through the queue and has none to report.
	first bool
}

// grant is a hand-off from a releasing lease of this Client to a waiter,
// made before its script is sent. The receiver holds the lock from the
// moment it is granted: the releaser's lease was valid, and until the
// script runs Redis has the lock under the releaser's token, after it under
// the receiver's; both are this process's, and the releaser has stopped.
// The receiver's fence is the releaser's + 1, as the script sets it, and
// until the reply confirms the hand-off its lease has the releaser's
// deadline (capped by its own TTL from the grant) and is not renewed; what
// it sends to Redis about the lock (release, extend, give-backs) waits for
// the reply, so it cannot overtake the script, and a hand-off on to the
// next waiter follows the script in the lock's line (keyQueue.hops).
type grant struct {
	from     string  // the releaser's token: the script takes the lock from it
	w        *waiter // the receiver
	fence    int64
	sent     time.Time     // when the script was sent (about): the receiver's deadline counts from it
	deadline int64         // the receiver's until the reply: the releaser's, capped by its TTL from the grant (ns since Client.epoch)
	done     chan struct{} // closed once the reply is in and acted on
	// Guarded by Client.qmu (taken before the renewer's mutex where both
	// are: grantedLease, finishHandoff).
	settled bool   // the reply is in (rep, err): replyOK, mayHaveRun
	claimed bool   // the receiver took the grant, or its acquire ended holding the lock
	left    bool   // the receiver gave up before the reply: give the token back on success
	lease   *Lease // the receiver's lease, once scheduled with the releaser's deadline
	// broken: this hand-off failed, or one before it in the lock's line of
	// hand-offs did (sendHops), so its receiver cannot hand on.
	broken bool
	// The reply (backend.handoffs), written before done closes.
	rep acquireReply
	err error
}

func (c *Client) queue(n redisNames) *keyQueue {
	q := c.queues[n.queue]
	if q == nil {
		q = &keyQueue{names: n}
		q.waiters = q.buf[:0]
		c.queues[n.queue] = q
	}
	return q
}

// enqueue adds a waiter; false when maxWaiters (> 0) are already waiting
// (holder is then the last holder the queue met, if any: Seen set). When
// the waiter queues behind a lease of this Client, holder is that lease.
func (c *Client) enqueue(n redisNames, req acquireReq, maxWaiters int, since time.Time, name string) (w *waiter, holder Holder, ok bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queue(n)
	if maxWaiters > 0 && len(q.waiters) >= maxWaiters {
		return nil, q.lastMet(), false
	}
	if q.w0.turn == nil {
		w = &q.w0 // a new queue (w0 is never reused: a queue is dropped once empty)
	} else {
		w = &waiter{}
	}
	excl := q.names.exclusive()
	*w = waiter{turn: make(chan struct{}, 1), req: req, seen0: q.seen, heldAtStart: excl && q.held > 0 || q.contended, since: since, name: name}
	q.waiters = append(q.waiters, w)
	if len(q.waiters) == 1 && (q.held == 0 || !excl) {
		w.first = true
		w.turn <- struct{}{}
	} else if q.met == nil {
		// The first waiter that waits behind another caller: from now on
		// the holders met are logged for it, starting with the last one.
		q.met = &holderLog{}
		if q.seen > 0 {
			q.met.add(q.seen, q.holder)
		}
	}
	if excl && q.held > 0 {
		holder = q.holder
	}
	return w, holder, true
}

// dequeue removes w after its acquire ended; acquired: it now holds the
// lock, by its own attempt or by a grant (which the releaser counted);
// place: a reader's place when admitted (by the attempt sent at sent, or
// granted to its queue's entry), the pass of the readers queued behind it.
// It returns the queue id the caller must take out of the lock's wait
// queue in Redis (see settle; leaveQueue), or "".
func (c *Client) dequeue(n redisNames, w *waiter, acquired bool, h Holder, place int64, granted bool, sent time.Time) (leave string) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[n.queue]
	c.remove(q, w)
	switch {
	case w.grant != nil && !acquired:
		// Granted, but the caller gave up at the same moment: give it back
		// (once the hand-off's reply is in, or the give-back could overtake
		// the script that gives the lock to its token).
		g := w.grant
		w.grant = nil
		q.held--
		if !g.settled {
			g.left = true
		} else {
			c.releaseLater(n, w.req.token)
		}
	case w.grant != nil: // counted and logged by the hand-off
		w.grant.claimed = true // by the grant, or its own attempt at the same time
	case acquired:
		q.held++
		q.taken(h)
		if place > 0 {
			// The readers that queued here before the reader's place was
			// given were waiting before any writer that queued after it:
			// they go in on that place. The place is given as the attempt
			// that took it runs, after it was sent; a granted place as the
			// attempt that put the queue's entry in Redis ran.
			if granted {
				sent = q.placedAt
			}
			q.pass, q.passLeft = place, 0
			for _, x := range q.waiters {
				if !x.since.Before(sent) {
					break
				}
				q.passLeft++
			}
		}
	}
	return c.settle(n.queue, q)
}

func (c *Client) remove(q *keyQueue, w *waiter) {
	for i, x := range q.waiters {
		if x == w {
			copy(q.waiters[i:], q.waiters[i+1:])
			q.waiters[len(q.waiters)-1] = nil
			q.waiters = q.waiters[:len(q.waiters)-1]
			return
		}
	}
}

// takeGrant returns the grant w was handed (the lock, by a releasing lease
// of this Client), or nil when it was not.
func (c *Client) takeGrant(w *waiter) *grant {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if w.grant != nil {
		w.grant.claimed = true
	}
	return w.grant
}

// pickHandoff chooses the waiter a releasing lease l of this Client passes
// the lock to, grants it at once and puts the grant in the lock's line of
// hand-offs (nil: no waiter, the streak is used up, l's own hand-off
// failed, or the backend cannot hand off). lead: no batch of this lock is
// on its way, so the caller sends this one itself (sendHops); else it goes
// with the next batch.
func (c *Client) pickHandoff(l *Lease) (g *grant, q *keyQueue, lead bool) {
	if !c.b.canHandoff() || l.names.kind != kindMutex {
		return nil, nil, false
	}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q = c.queues[l.names.queue]
	if q == nil || q.held != 1 || len(q.waiters) == 0 || (l.grant != nil && l.grant.broken) {
		return nil, nil, false
	}
	if q.streak == 0 {
		q.run = len(q.waiters)
	}
	if q.streak >= maxStreak || (q.remote && q.streak >= q.run) {
		// Release publicly: the first process in Redis's wait queue gets
		// the lock, or, with nobody there, whoever asks first.
		q.streak = 0
		return nil, nil, false
	}
	now := c.monoNow()
	deadline := l.deadlineNs.Load()
	if time.Duration(deadline-now) < l.ttl/3 {
		// The releaser's lease is near its deadline (renewals are late):
		// the receiver would start on too little. Release publicly; the
		// head attempts once the lock is free.
		q.streak = 0
		return nil, nil, false
	}
	w := q.waiters[0]
	c.remove(q, w)
	// Until the reply, the receiver holds on what Redis is sure to keep:
	// the releaser's validity, and no longer than its own TTL from now
	// (the script sets that expiry when it runs, later than now).
	ttl := w.req.ttl
	deadline = min(deadline, now+(ttl-c.b.drift(ttl)).Nanoseconds())
	g = &grant{from: l.token, w: w, fence: l.fence + 1, sent: time.Now(), deadline: deadline, done: make(chan struct{})}
	w.grant = g
	q.met1(Holder{Owner: w.req.owner, Metadata: w.req.meta, TTL: w.req.ttl, Token: g.fence})
	q.streak++
	if q.sending {
		q.hops = append(q.hops, g)
	} else {
		q.sending, lead = true, true
	}
	poke(w.turn) // held stays 1: the lock moves from one local lease to another
	return g, q, lead
}

// sendHops sends batch, the next hand-offs of q's lock in grant order, in
// one round trip and applies the replies; it returns the hand-offs granted
// meanwhile, which go next (nil: none, and the line is idle).
//
// A hand-off that failed breaks the line from there: its receiver, and
// every receiver after it, started on a lease Redis may not have. They all
// fail (the ones not sent are not sent), the latest first, before any
// token that may hold the lock is given back, so nobody of this process
// still believes it holds once the lock can be free.
func (c *Client) sendHops(ctx context.Context, q *keyQueue, batch []*grant) []*grant {
	c.b.handoffs(ctx, q.names, batch)
	n := q.names
	brk := slices.IndexFunc(batch, func(g *grant) bool { return !g.replyOK() })
	c.qmu.Lock()
	next := q.hops
	q.hops = nil
	if brk >= 0 {
		for _, g := range batch[brk:] {
			g.broken = true
		}
		for _, g := range next {
			g.broken, g.err = true, errLineBroken
		}
		batch, next = append(batch, next...), nil
	}
	if len(next) == 0 {
		q.sending = false
	}
	c.qmu.Unlock()
	if brk < 0 {
		for _, g := range batch {
			c.finishHandoff(n, g)
		}
		return next
	}
	for i := len(batch) - 1; i >= 0; i-- {
		c.finishHandoff(n, batch[i])
	}
	// The releasers' tokens that may hold the lock go back: one whose
	// script failed without a reply, one whose script was not sent (the
	// hand-off before it may have given it the lock). A receiver's token
	// goes back with its lease (Lease.lose), or is the head's again when
	// its grant is taken back.
	for _, g := range batch[brk:] {
		if errors.Is(g.err, errLineBroken) || g.mayHaveRun() {
			c.releaseLater(n, g.from)
		}
	}
	return nil
}

// errLineBroken is the error of a hand-off never sent: one before it in
// the lock's line failed, so its releaser may not have held the lock.
var errLineBroken = errors.New("lockkit: a hand-off before this one was not confirmed")

// replyOK: the hand-off's reply says its receiver now holds the lock.
func (g *grant) replyOK() bool { return g.err == nil && g.rep.ok && g.rep.fence == g.fence }

// mayHaveRun: the hand-off got no reply, and its script may have run.
func (g *grant) mayHaveRun() bool {
	return g.err != nil && !errors.Is(g.err, errLineBroken) && mayHaveRun(g.err)
}

// finishHandoff applies the reply of the hand-off g (rep, err) to its
// receiver w and then lets everything that waited for the reply go on.
func (c *Client) finishHandoff(n redisNames, g *grant) {
	defer close(g.done)
	w, remote := g.w, g.rep.queued // remote: other processes wait in Redis
	ok, maybe := g.replyOK(), g.mayHaveRun()
	c.qmu.Lock()
	q := c.queues[n.queue] // nil once w's lease ended and nobody else is here
	g.settled = true
	if q != nil && ok {
		q.remote = remote
	} else if q != nil {
		q.streak = 0
	}
	lease, left, claimed := g.lease, g.left, g.claimed
	if ok && lease != nil {
		c.ren.confirm(lease, g.sent, w.req.ttl) // the receiver's deadline now counts from the hand-off
	}
	if !ok && !claimed && !left && q != nil {
		// w still waits and never saw the grant: take it back. w attempts
		// in Redis as the head (and finds its token there if the script
		// ran after all).
		w.grant = nil
		q.waiters = slices.Insert(q.waiters, 0, w)
		q.held--
		c.settle(n.queue, q)
	}
	c.qmu.Unlock()
	switch {
	case (ok || maybe) && left:
		c.releaseLater(n, w.req.token) // w gave up meanwhile
	case !ok && lease != nil:
		// w held it on the releaser's lease, which had ended in Redis (or
		// nobody can say whether the script ran): w's lease ends, and gives
		// its token back once g is done.
		lease.lose(ErrLost)
	}
}

// localBusy: callers of this Client queue for n, or a lease of this Client
// holds it exclusively (a mutex, the write side), and this Client knows
// whom for: the local holder, or the holder Redis last named to its
// queue's head. NoWait refuses then, naming that holder; with nobody known
// yet (the head's first attempt unanswered) it makes its one attempt
// instead. A permit or the read side held here is no reason: another may
// be free.
func (c *Client) localBusy(n redisNames) (Holder, bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[n.queue]
	if q != nil && (n.exclusive() && q.held > 0 || len(q.waiters) > 0) && q.seen > 0 {
		return q.holder, true
	}
	return Holder{}, false
}

// localAcquired counts a lease taken without queueing (TryAcquire, NoWait).
func (c *Client) localAcquired(n redisNames, h Holder) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queue(n)
	q.held++
	q.taken(h)
}

// taken: a lease of this Client (h) took the lock; c.qmu held. It is a
// holder seen by every waiter queued now, and Redis's earlier "held" is
// history.
func (q *keyQueue) taken(h Holder) {
	q.met1(h)
	q.contended = false
}

// met1 records h, met now (a new moment seen), as the last holder and in
// the log; c.qmu held. A holder met again keeps the Seen it was first met.
func (q *keyQueue) met1(h Holder) {
	q.seen++
	switch {
	case q.seen > 1 && sameHolder(q.holder, h):
		h.Seen = q.holder.Seen
	case h.Seen.IsZero():
		h.Seen = time.Now()
	}
	q.holder = h
	if q.met != nil {
		q.met.add(q.seen, h)
	}
}

// lastMet is the last holder the queue met; zero when none; c.qmu held.
func (q *keyQueue) lastMet() Holder {
	if q.seen == 0 {
		return Holder{}
	}
	return q.holder
}

// metWhileQueued returns the distinct holders w's queue met since w queued
// (and the one known when it queued), oldest first, at most
// MaxQueuedHolders: whom w waited for while it waited behind others. Not
// w itself when it was handed the lock.
func (c *Client) metWhileQueued(rkey string, w *waiter) []Holder {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil || q.met == nil {
		return nil
	}
	l := q.met
	var hs []Holder
	for i := l.n - min(l.n, MaxQueuedHolders); i < l.n; i++ {
		e := &l.e[i%MaxQueuedHolders]
		if e.seq < w.seen0 || (e.seq == w.seen0 && !w.heldAtStart) {
			continue
		}
		if w.grant != nil && e.h.Token == w.grant.fence && e.h.Owner == w.req.owner {
			continue
		}
		if !slices.ContainsFunc(hs, func(h Holder) bool { return sameHolder(h, e.h) }) {
			hs = append(hs, e.h)
		}
	}
	return hs
}

// refused: Redis answered an attempt on rkey "held by h" (the head's, or
// a TryAcquire's or NoWait's of this Client). Every waiter queued now has
// seen the holder. queued: the attempt put the queue in Redis's wait queue.
func (c *Client) refused(rkey string, queued bool, h Holder, sent time.Time) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[rkey]; q != nil {
		q.met1(h)
		q.contended = true
		if queued && !q.inRedis {
			q.placedAt = sent
		}
		q.inRedis = q.inRedis || queued
		q.passLeft = 0 // a reader refused on the pass: it is spent
		if q.id == "" && c.b.canHandoff() {
			// Contended: from the next attempt on, the head waits in
			// Redis's wait queue under this id (an uncontended acquire
			// never makes one).
			q.id = newToken()
		}
	}
}

// inWaitQueue records what the head's attempt left in Redis's wait queue:
// an entry (maybe: the attempt failed after it may have run), or none (the
// attempt took the lock, which removes the entry or consumes its grant).
func (c *Client) inWaitQueue(rkey string, maybe bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[rkey]; q != nil {
		q.inRedis = maybe
		if !maybe {
			q.skip = false // nothing kept in Redis: the next head asks
		}
	}
}

// requeued: a caller of a shared lock's queue rkey went in and kept the
// queue's place in the lock's wait queue for the callers behind it
// (acquireReply.requeued); the next head waits for its grant (queuedFor).
func (c *Client) requeued(rkey string, sent time.Time) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[rkey]; q != nil {
		q.inRedis, q.skip, q.placedAt = true, true, sent
	}
}

// queuedFor is called by a new head before its first attempt: true when
// its queue is in the lock's wait queue already, kept there by the caller
// before it as it went in (acquireReply.requeued): the head then waits for
// its grant (or its refresh) instead of asking only to be refused.
func (c *Client) queuedFor(rkey string) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil || !q.skip || q.passLeft > 0 { // a reader with a pass asks at once
		return false
	}
	q.skip = false
	return q.inRedis && q.id != ""
}

// sawHolder reports whether w, queued on rkey, has seen the lock held
// during its wait: known held when it queued, or seen since by anyone of
// its queue (an answered attempt, a lease of this Client taking it).
func (c *Client) sawHolder(rkey string, w *waiter) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	// A lease of this Client taking the lock counts in q.seen (taken), and
	// w's queue lives while w waits: the two terms say it all.
	return w.heldAtStart || c.queues[rkey].seen != w.seen0
}

// localRelease: a lease of this Client on rkey ended; the head may go (if
// the release granted the lock to another process, its attempt queues it
// in Redis behind that one).
func (c *Client) localRelease(rkey string) { c.localReleased(rkey, false) }

// localReleased is localRelease after a release that says whether what it
// freed went to other processes' queues only (elsewhere): then a head this
// Client has in Redis's wait queue already is not woken (it would only be
// refused; its own grant wakes it).
func (c *Client) localReleased(rkey string, elsewhere bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil {
		return
	}
	if q.held > 0 {
		q.held--
	}
	q.streak = 0
	if !elsewhere {
		q.skip = false // freed, or granted to this queue: the head asks
	}
	if !elsewhere || !q.inRedis || q.names.exclusive() {
		// (An exclusive side's head waits for its turn until now; it then
		// waits for its grant as queuedFor says.)
		c.wakeHead(q)
	}
	if id := c.tidy(rkey, q); id != "" {
		c.releaseLater(q.names, id) // no caller here to wait for it
	}
}

// queueID is the id of this Client's queue rkey in the lock's wait queue
// in Redis ("" for none).
func (c *Client) queueID(rkey string) string {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[rkey]; q != nil && q.inRedis {
		return q.id
	}
	return ""
}

// beforeAttempt is called by the head before each attempt: it marks the
// "held" the head last heard as being asked again (a waiter that queues
// from now on has not seen it), and returns the id the head attempts
// under ("" until the queue met the lock held) and, on the read side, the
// pass it may use (0: none; each caller queued when the pass was made
// uses it once). more (shared locks): callers wait behind the head; next
// is the holder metadata of the first of them, who takes the head's place.
func (c *Client) beforeAttempt(rkey string) (queue string, place int64, more bool, next string) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[rkey]; q != nil {
		q.contended = false
		if q.id == "" && q.names.kind != kindMutex {
			// A shared lock's waiter holds its place from its first
			// refusal (a writer that waits keeps later readers out at
			// once), so its head asks under an id from the start.
			q.id = newToken()
		}
		queue = q.id
		if q.passLeft > 0 {
			q.passLeft--
			place = q.pass
		}
		if q.names.kind != kindMutex && len(q.waiters) > 1 {
			more, next = true, q.waiters[1].req.meta
		}
	}
	return queue, place, more, next
}

// settle wakes the head when the lock is not held locally (or, for a
// permit or the read side, whenever there is one) and drops the queue (and
// its subscription) once nobody waits or holds; c.qmu held.
//
// When the last waiter has left, the queue leaves Redis's wait queue too,
// passing on a grant it may have received meanwhile. A mutex's entry holds
// nobody back (a free mutex is taken by whoever asks; the entry only
// decides who is granted at a release), so it leaves in the background. A
// shared lock's entry does (a queued writer keeps new readers out), so
// settle returns its id for the caller to take out (leaveQueue), and
// the queue takes a new id if it meets the lock held again.
func (c *Client) settle(rkey string, q *keyQueue) (leave string) {
	c.wakeHead(q)
	return c.tidy(rkey, q)
}

// wakeHead gives the head its turn if it may ask; c.qmu held.
func (c *Client) wakeHead(q *keyQueue) {
	if (q.held == 0 || !q.names.exclusive()) && len(q.waiters) > 0 {
		select {
		case q.waiters[0].turn <- struct{}{}:
		default:
		}
	}
}

// tidy is settle without the head's turn; c.qmu held.
func (c *Client) tidy(rkey string, q *keyQueue) (leave string) {
	if len(q.waiters) == 0 && q.sub != nil {
		q.sub.unsubscribe()
		q.sub = nil
	}
	if len(q.waiters) == 0 && q.inRedis {
		q.inRedis = false
		if q.names.kind == kindMutex {
			c.releaseLater(q.names, q.id)
		} else {
			leave, q.id = q.id, ""
		}
	}
	if len(q.waiters) == 0 {
		q.passLeft, q.skip = 0, false
	}
	if len(q.waiters) == 0 && q.held == 0 {
		delete(c.queues, rkey)
	}
	return leave
}

// subscribe takes the queue's notification subscription on first use and
// returns the channel its wake-ups arrive on.
func (c *Client) subscribe(n redisNames) (chan struct{}, error) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[n.queue]
	if q.sub == nil {
		if q.wake == nil {
			q.wake = make(chan struct{}, 1)
		}
		s, err := c.b.notifications().subscribe(n.channel, q.wake, q.id)
		if err != nil {
			return nil, err
		}
		q.sub = s
	}
	return q.wake, nil
}
