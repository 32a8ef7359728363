package core

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// renewer keeps every lease of a Client alive with two goroutines, whatever
// the number of leases:
//
//   - the scheduler owns a heap ordered by each lease's next event. It sends
//     renewals that are due (and those due soon, so they travel together) to
//     the I/O goroutine, and it ends leases whose local deadline passed. It
//     never waits on the network, so a hung Redis cannot delay a loss.
//   - the I/O goroutine sends each batch as one pipeline and applies the
//     replies: confirmed → deadline = send time + TTL − drift; another owner →
//     lost; error → retried until the deadline.
//
// The deadline is computed from the send time of the request the server
// confirmed, so the local belief never outlives the server's expiry. A
// process frozen past a deadline finds the lease lost when it resumes: the
// scheduler ends it, and a renewal is only sent before the deadline.
//
// A lease with a MaxHold has one more event: when it has been held that
// long, the scheduler ends its context (cause ErrMaxHold) and renews it no
// more, so the lock expires within one TTL unless released first.
type renewer struct {
	c *Client

	mu      sync.Mutex
	h       leaseHeap
	pending []*Lease // renewals handed to the I/O goroutine
	started bool
	stopped bool
	// timer wakes the scheduler for the heap's next event; armed is when
	// it fires (zero: stopped). Both change only under mu, so a new lease
	// can bring the wake-up forward itself (pushLocked).
	timer *time.Timer
	armed time.Time

	ioKick chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRenewer(c *Client) *renewer {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	return &renewer{c: c, timer: timer, ioKick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// add schedules a freshly acquired root lease; false when the Client is closed.
func (r *renewer) add(l *Lease, sent time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.startLocked() {
		return false
	}
	l.startHold(r.c)
	r.setConfirmed(l, sent, l.ttl)
	r.pushLocked(l)
	return true
}

// startHold starts l's MaxHold clock, from its acquire.
func (l *Lease) startHold(c *Client) {
	if l.maxHold > 0 {
		l.holdNs.Store(l.acquiredAt.Add(l.maxHold).Sub(c.epoch).Nanoseconds())
	}
}

// setDue sets l's next event to t, or sooner to its MaxHold, or, once it
// has been held for its MaxHold, to its deadline alone. r.mu held.
func (l *Lease) setDue(t time.Time) {
	switch h := l.holdNs.Load(); {
	case l.overdue:
		t = l.deadline()
	case h != 0:
		if hold := l.c.epoch.Add(time.Duration(h)); hold.Before(t) {
			t = hold
		}
	}
	l.due = t
}

// stopRenewing renews l no more: it has been held for its MaxHold.
func (r *renewer) stopRenewing(l *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overdueLocked(l)
}

// overdueLocked marks l held for its MaxHold; r.mu held.
func (r *renewer) overdueLocked(l *Lease) {
	if l.idx < 0 || l.overdue {
		return
	}
	l.overdue = true
	l.setDue(l.deadline())
	heap.Fix(&r.h, l.idx)
	r.armLocked(l.due)
}

// pushLocked schedules l, its first event set. If the scheduler's timer
// would fire after that event, or is stopped (the heap was empty when the
// scheduler last looked), it is brought forward here rather than by waking
// the scheduler to do it: the common acquire-release cycle wakes no
// goroutine. (Poking the scheduler instead cost a wake-up per cycle
// whenever the scheduler had last looked at an empty heap, which it then
// found again, the lease released meanwhile.) r.mu held.
func (r *renewer) pushLocked(l *Lease) {
	heap.Push(&r.h, l)
	r.armLocked(l.due)
}

// armLocked makes the scheduler's timer fire by t. r.mu held.
func (r *renewer) armLocked(t time.Time) {
	if r.armed.IsZero() || t.Before(r.armed) {
		r.armed = t
		r.timer.Reset(time.Until(t))
	}
}

// startLocked starts the two goroutines on the first lease; false once
// stopped. r.mu held.
func (r *renewer) startLocked() bool {
	if r.stopped {
		return false
	}
	if !r.started {
		r.started = true
		r.wg.Add(2)
		go r.schedule()
		go r.io()
	}
	return true
}

// addPending schedules a lease handed over before the hand-off's reply:
// its deadline is the grant's (deadline, ns since the Client's epoch)
// and, as for a renewal in flight, nothing but that deadline is due until
// confirm. false when the Client is closed.
func (r *renewer) addPending(l *Lease, deadline int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.startLocked() {
		return false
	}
	l.deadlineNs.Store(deadline)
	l.inflight = true
	l.startHold(r.c)
	l.setDue(l.deadline())
	r.pushLocked(l)
	return true
}

// setConfirmed records a confirmation of l sent at sent; r.mu held.
func (r *renewer) setConfirmed(l *Lease, sent time.Time, ttl time.Duration) {
	l.ttl = ttl
	l.deadlineNs.Store(sent.Add(ttl - r.c.b.drift(ttl)).Sub(r.c.epoch).Nanoseconds())
	l.inflight = false
	if l.noRenew || l.overdue {
		l.renewAt = time.Time{}
		l.setDue(l.deadline())
	} else {
		l.renewAt = sent.Add(ttl / 3)
		l.setDue(l.renewAt)
	}
}

// confirm applies an explicit Extend, or the reply of the hand-off that
// gave l the lock. Like a new lease, it brings the timer forward itself
// rather than wake the scheduler: a hand-off confirmed while its receiver
// holds used to cost a wake-up each.
func (r *renewer) confirm(l *Lease, sent time.Time, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.idx < 0 {
		return
	}
	r.setConfirmed(l, sent, ttl)
	heap.Fix(&r.h, l.idx)
	r.armLocked(l.due)
}

func (r *renewer) remove(l *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.idx >= 0 {
		heap.Remove(&r.h, l.idx)
	}
}

// stop ends both goroutines and hands back the leases still scheduled.
func (r *renewer) stop() []*Lease {
	r.mu.Lock()
	r.stopped = true
	leases := append([]*Lease(nil), r.h...)
	for _, l := range leases {
		l.idx = -1
	}
	r.h = nil
	r.pending = nil
	r.armed = time.Time{}
	r.timer.Stop()
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return leases
}

func (r *renewer) schedule() {
	defer r.wg.Done()
	for {
		lost, overdue := r.tick(time.Now())
		for _, l := range overdue {
			l.overrun()
		}
		for _, l := range lost {
			l.lose(ErrLost)
		}
		select {
		case <-r.ctx.Done():
			return
		case <-r.timer.C:
		}
	}
}

// tick handles every event due at now: deadlines passed (returned as
// lost), MaxHolds reached (returned as overdue, renewed no more), and
// renewals due, plus renewals due within a sixth of their TTL, which join
// the batch. It sets the timer for the next event (or stops it).
func (r *renewer) tick(now time.Time) (lost, overdue []*Lease) {
	r.c.cfg.hooks.tick()
	r.mu.Lock()
	defer r.mu.Unlock()
	batched := false
	for len(r.h) > 0 {
		l := r.h[0]
		if !now.Before(l.deadline()) {
			heap.Pop(&r.h)
			lost = append(lost, l)
			continue
		}
		if h := l.holdNs.Load(); h != 0 && !l.overdue && now.Sub(r.c.epoch) >= time.Duration(h) {
			r.overdueLocked(l)
			overdue = append(overdue, l)
			continue
		}
		if l.inflight || l.noRenew || l.overdue { // next event is its deadline (or MaxHold), not reached yet
			break
		}
		if now.Before(l.due) && l.due.Sub(now) > l.ttl/6 { // not due, nor soon
			break
		}
		l.inflight = true
		l.setDue(l.deadline())
		heap.Fix(&r.h, 0)
		r.pending = append(r.pending, l)
		batched = true
	}
	if batched {
		poke(r.ioKick)
	}
	r.armed = time.Time{}
	if len(r.h) > 0 {
		r.armLocked(r.h[0].due)
	} else {
		r.timer.Stop()
	}
	return lost, overdue
}

func (r *renewer) io() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.ioKick:
		}
		r.c.cfg.hooks.beforeRenew()
		r.mu.Lock()
		batch := r.pending
		r.pending = nil
		now := time.Now()
		items := make([]renewal, 0, len(batch))
		leases := make([]*Lease, 0, len(batch))
		var earliest time.Time
		for _, l := range batch {
			if l.idx < 0 || !now.Before(l.deadline()) { // ended, or the scheduler will end it
				continue
			}
			items = append(items, renewal{names: l.names, token: l.token, ttl: l.ttl})
			leases = append(leases, l)
			if earliest.IsZero() || l.deadline().Before(earliest) {
				earliest = l.deadline()
			}
		}
		r.mu.Unlock()
		r.c.cfg.hooks.renewBatch(len(items))
		if len(items) == 0 {
			continue
		}
		ctx, cancel := context.WithDeadline(r.ctx, earliest)
		sent := time.Now()
		r.c.b.renew(ctx, items)
		cancel()
		r.apply(leases, items, sent)
	}
}

func (r *renewer) apply(leases []*Lease, items []renewal, sent time.Time) {
	var lost []*Lease
	r.mu.Lock()
	now := time.Now()
	for i, l := range leases {
		it := &items[i]
		if l.idx < 0 {
			continue
		}
		switch {
		case it.err != nil || it.ttl != l.ttl:
			// Failed, or an Extend changed the TTL while this renewal was in
			// flight (the server may have applied them in either order):
			// learn nothing, renew again soon.
			l.inflight = false
			retry := min(max(l.ttl/10, 10*time.Millisecond), time.Second)
			due := now.Add(retry)
			if l.deadline().Before(due) {
				due = l.deadline()
			}
			l.setDue(due)
			heap.Fix(&r.h, l.idx)
		case !it.ok:
			heap.Remove(&r.h, l.idx)
			lost = append(lost, l)
		default:
			r.setConfirmed(l, sent, it.ttl)
			heap.Fix(&r.h, l.idx)
		}
	}
	if len(r.h) > 0 {
		r.armLocked(r.h[0].due) // a retry may be due before the timer
	}
	r.mu.Unlock()
	for i, l := range leases {
		err := items[i].err
		if err == nil && !items[i].ok {
			err = ErrLost
		}
		r.c.obs.Renewed(l.ctx, l.info(), err)
	}
	for _, l := range lost {
		l.lose(ErrLost)
	}
}

// leaseHeap orders leases by their next event.
type leaseHeap []*Lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.idx = len(*h)
	*h = append(*h, l)
}
func (h *leaseHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	l.idx = -1
	*h = old[:len(old)-1]
	return l
}
