package core

// Stats is the size of each table of a Client that grows with the keys its
// callers name. Each one empties again once its last user is gone: a
// monitor can graph them, and a test that floods a Client with distinct
// keys (lockkit's conformance suite for adapters, testing/conformance) can
// check that nothing a request chose stays behind.
type Stats struct {
	// Queues is the local FIFO queues, one per key (and side of a
	// read/write lock) in use: holders, waiters, hand-off state.
	Queues int
	// Waiters is the callers queued in those queues, all keys together.
	Waiters int
	// Subscriptions is the release-notification channels the pub/sub hubs
	// know (every node's under Redlock; shard channels on a cluster).
	Subscriptions int
	// Leases is the leases scheduled for renewal.
	Leases int
	// Renewals is the renewals handed to the renewal I/O goroutine and not
	// yet sent.
	Renewals int
}

// Stats reads the size of c's tables, each under its own lock (so the
// figures are not one snapshot), in time proportional to the number of
// pub/sub hubs and queues.
func (c *Client) Stats() Stats {
	var s Stats
	c.qmu.Lock()
	s.Queues = len(c.queues)
	for _, q := range c.queues {
		s.Waiters += len(q.waiters)
	}
	c.qmu.Unlock()

	for _, h := range c.hubs() {
		h.mu.Lock()
		s.Subscriptions += len(h.subs)
		h.mu.Unlock()
	}
	if p, ok := c.b.(*primary); ok && p.shard != nil {
		s.Subscriptions += p.shard.subscriptions()
	}

	c.ren.mu.Lock()
	s.Leases, s.Renewals = len(c.ren.h), len(c.ren.pending)
	c.ren.mu.Unlock()
	return s
}

// hubs lists the classic pub/sub hubs of c's backend: one for a single
// primary, one per node under Redlock, none on shard channels (a cluster).
func (c *Client) hubs() []*hub {
	switch b := c.b.(type) {
	case *primary:
		if b.hub == nil {
			return nil
		}
		return []*hub{b.hub}
	case *quorum:
		hs := make([]*hub, len(b.nodes))
		for i, p := range b.nodes {
			hs[i] = p.hub
		}
		return hs
	}
	return nil
}
