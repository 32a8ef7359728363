package core

// keyQueue is this Client's local FIFO for one lock. Only the head talks to
// Redis, and only while no lease of this Client holds the lock, so a hot key
// costs Redis O(1) commands per hand-off however many goroutines wait.
// Fields are guarded by Client.qmu.
type keyQueue struct {
	waiters []*waiter
	held    int // leases of this Client holding the lock (0 or 1 unless one was lost unnoticed)
	// sub is the channel subscription shared by successive heads while the
	// queue has waiters, so a hand-off inside the process does not resubscribe.
	sub waitSub
	// wake is poked by notifications for this key (release messages and
	// subscription confirmations); the head waits on it.
	wake chan struct{}
}

type waiter struct {
	// turn gets a value when the waiter becomes the head with the lock not
	// held locally, and again when a local holder releases.
	turn chan struct{}
}

// enqueue adds a waiter; false when maxWaiters (> 0) are already waiting.
func (c *Client) enqueue(rkey string, maxWaiters int) (*waiter, bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil {
		q = &keyQueue{wake: make(chan struct{}, 1)}
		c.queues[rkey] = q
	}
	if maxWaiters > 0 && len(q.waiters) >= maxWaiters {
		return nil, false
	}
	w := &waiter{turn: make(chan struct{}, 1)}
	q.waiters = append(q.waiters, w)
	if len(q.waiters) == 1 && q.held == 0 {
		w.turn <- struct{}{}
	}
	return w, true
}

// dequeue removes w; acquired: it now holds the lock.
func (c *Client) dequeue(rkey string, w *waiter, acquired bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	for i, x := range q.waiters {
		if x == w {
			copy(q.waiters[i:], q.waiters[i+1:])
			q.waiters[len(q.waiters)-1] = nil
			q.waiters = q.waiters[:len(q.waiters)-1]
			break
		}
	}
	if acquired {
		q.held++
	}
	c.settle(rkey, q)
}

// localBusy: this Client holds rkey or queues for it (NoWait refuses then).
func (c *Client) localBusy(rkey string) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	return q != nil && (q.held > 0 || len(q.waiters) > 0)
}

// localAcquired counts a lease taken without queueing (TryAcquire, NoWait).
func (c *Client) localAcquired(rkey string) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil {
		q = &keyQueue{wake: make(chan struct{}, 1)}
		c.queues[rkey] = q
	}
	q.held++
}

// localRelease: a lease of this Client on rkey ended; the head may go.
func (c *Client) localRelease(rkey string) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[rkey]
	if q == nil {
		return
	}
	if q.held > 0 {
		q.held--
	}
	c.settle(rkey, q)
}

// settle wakes the head when the lock is not held locally and drops the
// queue (and its subscription) once nobody waits or holds; c.qmu held.
func (c *Client) settle(rkey string, q *keyQueue) {
	if q.held == 0 && len(q.waiters) > 0 {
		select {
		case q.waiters[0].turn <- struct{}{}:
		default:
		}
	}
	if len(q.waiters) == 0 && q.sub != nil {
		q.sub.unsubscribe()
		q.sub = nil
	}
	if len(q.waiters) == 0 && q.held == 0 {
		delete(c.queues, rkey)
	}
}

// subscribe takes the queue's notification subscription on first use and
// returns the channel its wake-ups arrive on.
func (c *Client) subscribe(n redisNames) (chan struct{}, error) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	q := c.queues[n.key]
	if q.sub == nil {
		s, err := c.b.notifications().subscribe(n.channel, q.wake)
		if err != nil {
			return nil, err
		}
		q.sub = s
	}
	return q.wake, nil
}
