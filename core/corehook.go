package core

import "github.com/lockkit/lockkit/internal/corehook"

func init() { corehook.Tables = tables }

// tables sizes every table of c that grows with the keys requests name. The
// per-key hand-off and yield state lives in the queue entries, so "queues"
// covers it.
func tables(client any) map[string]int {
	c, ok := client.(*Client)
	if !ok || c == nil {
		return nil
	}
	c.qmu.Lock()
	queues, waiters := len(c.queues), 0
	for _, q := range c.queues {
		waiters += len(q.waiters)
	}
	c.qmu.Unlock()

	subs := 0
	for _, h := range c.hubs() {
		h.mu.Lock()
		subs += len(h.subs)
		h.mu.Unlock()
	}
	if p, ok := c.b.(*primary); ok && p.shard != nil {
		subs += p.shard.subscriptions()
	}

	c.ren.mu.Lock()
	leases, pending := len(c.ren.h), len(c.ren.pending)
	c.ren.mu.Unlock()

	return map[string]int{"queues": queues, "waiters": waiters, "subscriptions": subs, "leases": leases, "renewals": pending}
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
