package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewRedlock returns a Client that locks on a majority of independent Redis
// masters, as the Redlock algorithm specifies: N masters (5 is the usual
// choice), a lock is held when N/2+1 of them granted it within its validity
// (TTL − elapsed − drift), and it is released on all of them.
//
// Pass one *redis.Client per master (redis.NewClient), each with
// ContextTimeoutEnabled and its own address. The type says it: a cluster
// client (redis.NewUniversalClient with several addresses returns one) is one
// logical master per key, not N independent ones, and a Ring shards keys.
//
// The Client and Lease API is the same as with New. Differences:
//   - every call fans out to all nodes concurrently, each bounded by the node
//     timeout (WithNodeTimeout), so a hung node cannot hold a call up;
//   - renewal needs a majority; without one until the deadline the lease is
//     lost (ErrLost);
//   - waiting uses every node's release notifications plus a jittered
//     retry, so contenders that split the votes do not collide forever;
//   - the fencing token is made monotonic by a second round trip: the max of
//     the granting nodes' tokens is written back to them and counts only once
//     a majority recorded it, so any later majority overlaps a node that
//     knows it (docs/guarantees.md);
//   - errors name the nodes that refused or failed (*QuorumError).
func NewRedlock(nodes []*redis.Client, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: Redlock needs at least one node (5 independent masters is the usual choice)", ErrBadRedisClient)
	}
	seen := map[string]bool{}
	var addrs []string
	for i, c := range nodes {
		if err := checkRedisClient(c); err != nil {
			return nil, fmt.Errorf("Redlock node %d: %w", i, err)
		}
		addr := c.Options().Addr
		if seen[addr] {
			return nil, fmt.Errorf("%w: Redlock node %s given twice", ErrBadRedisClient, addr)
		}
		seen[addr] = true
		addrs = append(addrs, addr)
	}
	return newClient(opts, func(cfg *config) (backend, error) {
		if cfg.ack.replicas > 0 {
			return nil, fmt.Errorf("%w: WithReplicaAck is for a single primary, not Redlock", ErrInvalidOption)
		}
		t := cfg.nodeTimeout
		if t == 0 {
			t = 100 * time.Millisecond
		}
		t = min(t, cfg.ttl/10)
		q := &quorum{addrs: addrs, need: len(nodes)/2 + 1, timeout: t}
		for _, rdb := range nodes {
			q.nodes = append(q.nodes, newPrimary(rdb, replicaAck{}, cfg.releaseTimeout))
		}
		return q, nil
	})
}

// quorum is the Redlock backend: one primary per independent master.
type quorum struct {
	nodes   []*primary
	addrs   []string
	need    int           // majority: N/2+1
	timeout time.Duration // per node call
}

type nodeResult[T any] struct {
	v   T
	err error
}

// fanOut calls f on the given nodes concurrently, each with its own timeout.
func fanOut[T any](ctx context.Context, q *quorum, idx []int, f func(context.Context, *primary) (T, error)) []nodeResult[T] {
	out := make([]nodeResult[T], len(q.nodes))
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, q.timeout)
			defer cancel()
			v, err := f(nctx, q.nodes[i])
			out[i] = nodeResult[T]{v, err}
		}()
	}
	wg.Wait()
	return out
}

func (q *quorum) all() []int {
	idx := make([]int, len(q.nodes))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func (q *quorum) acquire(ctx context.Context, n redisNames, r acquireReq) (acquireReply, error) {
	start := time.Now()
	// No place in the wait queue: a grant would need a majority round of
	// its own. A waiter's refusal asks for the release message instead.
	r.queue = ""
	if r.wait {
		r.queue = notifyOnly
	}
	res := fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) (acquireReply, error) {
		return p.acquire(ctx, n, r)
	})
	qe := &QuorumError{Op: "acquire", Need: q.need}
	var granted []int
	var fence int64
	holders := map[Holder]int{}
	for i, x := range res {
		switch {
		case x.err != nil:
			qe.Failed = append(qe.Failed, NodeError{q.addrs[i], x.err})
		case x.v.ok:
			granted = append(granted, i)
			fence = max(fence, x.v.fence)
		default:
			qe.Refused = append(qe.Refused, q.addrs[i])
			h := x.v.holder
			h.TTL, h.Token = 0, 0 // per node; count by owner
			holders[h]++
		}
	}
	qe.Granted = len(granted)
	valid := func() bool { return time.Since(start) < r.ttl-q.drift(r.ttl) }
	if len(granted) >= q.need && valid() {
		// Record the token on the granting nodes; it counts once a majority has it.
		rec := fanOut(ctx, q, granted, func(ctx context.Context, p *primary) (int64, error) {
			return fenceScript.Run(ctx, p.rdb, []string{n.key}, r.token, fence).Int64()
		})
		ok := 0
		for _, i := range granted {
			if rec[i].err == nil && rec[i].v == 1 {
				ok++
			}
		}
		if ok >= q.need && valid() {
			return acquireReply{ok: true, fence: fence}, nil
		}
		qe.Granted = ok
	}
	// No majority within validity: give back what we got, everywhere at once
	// (also where the reply was lost: the script may have run there).
	q.releaseToken(ctx, n, r.token)
	if len(qe.Failed) > len(q.nodes)-q.need {
		return acquireReply{}, qe
	}
	rep := acquireReply{quorum: qe, split: len(qe.Refused) < q.need}
	best := 0
	for _, x := range res {
		if x.err == nil && !x.v.ok {
			h := x.v.holder
			key := h
			key.TTL, key.Token = 0, 0
			if c := holders[key]; c > best || (c == best && h.TTL > rep.holder.TTL) {
				best, rep.holder = c, h
			}
		}
	}
	return rep, nil
}

// releaseToken releases token on every node concurrently, bounded by the
// node timeout, ignoring failures (the TTL covers them).
func (q *quorum) releaseToken(ctx context.Context, n redisNames, token string) {
	fanOut(context.WithoutCancel(ctx), q, q.all(), func(ctx context.Context, p *primary) (bool, error) {
		ok, err := p.release(ctx, n, token, false)
		return ok, err
	})
}

// tally classifies per-node booleans: true with a majority of true; an error
// when failures leave no majority either way.
func (q *quorum) tally(op string, res []nodeResult[bool]) (bool, error) {
	qe := &QuorumError{Op: op, Need: q.need}
	for i, x := range res {
		switch {
		case x.err != nil:
			qe.Failed = append(qe.Failed, NodeError{q.addrs[i], x.err})
		case x.v:
			qe.Granted++
		default:
			qe.Refused = append(qe.Refused, q.addrs[i])
		}
	}
	switch {
	case qe.Granted >= q.need:
		return true, nil
	case len(qe.Refused) > len(q.nodes)-q.need:
		return false, nil // a majority says no: settled
	}
	return false, qe
}

func (q *quorum) release(ctx context.Context, n redisNames, token string, keepExpiry bool) (bool, error) {
	return q.tally("release", fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) (bool, error) {
		return p.release(ctx, n, token, keepExpiry)
	}))
}

// handoffs are not done under Redlock: a hand-off would need a majority
// round of its own, so the lock is released and re-acquired instead.
func (q *quorum) handoffs(_ context.Context, _ redisNames, gs []*grant) {
	for _, g := range gs {
		g.err = errNoHandoff
	}
}

var errNoHandoff = errors.New("lockkit: no direct hand-off under Redlock")

func (q *quorum) canHandoff() bool { return false }

func (q *quorum) extend(ctx context.Context, n redisNames, token string, ttl time.Duration) (bool, error) {
	return q.tally("extend", fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) (bool, error) {
		return p.extend(ctx, n, token, ttl)
	}))
}

// renew sends the batch to every node as one pipeline each, concurrently;
// a lease is confirmed by a majority.
func (q *quorum) renew(ctx context.Context, batch []renewal) {
	res := fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) ([]renewal, error) {
		b := append([]renewal(nil), batch...)
		p.renew(ctx, b)
		return b, nil
	})
	for j := range batch {
		per := make([]nodeResult[bool], len(q.nodes))
		for i, x := range res {
			if x.v == nil { // the node's goroutine had no result (cannot happen: renew never fails as a whole)
				per[i] = nodeResult[bool]{err: errors.New("no reply")}
				continue
			}
			per[i] = nodeResult[bool]{x.v[j].ok, x.v[j].err}
		}
		batch[j].ok, batch[j].err = q.tally("renew", per)
	}
}

func (q *quorum) forceRelease(ctx context.Context, n redisNames) (bool, error) {
	res := fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) (bool, error) {
		return p.forceRelease(ctx, n)
	})
	qe := &QuorumError{Op: "force release", Need: q.need}
	removed := false
	for i, x := range res {
		if x.err != nil {
			qe.Failed = append(qe.Failed, NodeError{q.addrs[i], x.err})
		}
		removed = removed || x.v
	}
	if len(qe.Failed) > len(q.nodes)-q.need {
		return removed, qe
	}
	return removed, nil
}

func (q *quorum) inspect(ctx context.Context, n redisNames) (Holder, bool, error) {
	type hv struct {
		h    Holder
		held bool
	}
	res := fanOut(ctx, q, q.all(), func(ctx context.Context, p *primary) (hv, error) {
		h, held, err := p.inspect(ctx, n)
		return hv{h, held}, err
	})
	qe := &QuorumError{Op: "inspect", Need: q.need}
	counts := map[string]int{}
	var best Holder
	bestN := 0
	for i, x := range res {
		if x.err != nil {
			qe.Failed = append(qe.Failed, NodeError{q.addrs[i], x.err})
			continue
		}
		if !x.v.held {
			continue
		}
		id := x.v.h.Owner + "\x00" + x.v.h.Metadata
		counts[id]++
		if counts[id] > bestN {
			best, bestN = x.v.h, counts[id]
		}
	}
	if len(qe.Failed) > len(q.nodes)-q.need {
		return Holder{}, false, qe
	}
	return best, bestN >= q.need, nil
}

func (q *quorum) notifications() notifier { return q }

// subscribe fans a channel's subscription out to every node's hub, all
// poking the same wake channel.
func (q *quorum) subscribe(channel string, wake chan struct{}, id string) (waitSub, error) {
	qs := &quorumSub{}
	for _, p := range q.nodes {
		s, err := p.hub.subscribe(channel, wake, id)
		if err != nil {
			qs.unsubscribe()
			return nil, err
		}
		qs.subs = append(qs.subs, s)
	}
	return qs, nil
}

type quorumSub struct{ subs []waitSub }

func (qs *quorumSub) unsubscribe() {
	for _, s := range qs.subs {
		s.unsubscribe()
	}
}

// retryDelay: after a split vote (nobody held a majority) retry soon, at a
// random moment, so contenders stop colliding; otherwise wait for the
// holder's TTL like a single primary.
func (q *quorum) retryDelay(rep acquireReply) time.Duration {
	if rep.split {
		return q.jitter() + 5*time.Millisecond
	}
	return max(rep.holder.TTL, 0) + q.jitter()
}

// jitter spreads retries after a notification over up to one node timeout.
func (q *quorum) jitter() time.Duration { return rand.N(q.timeout) }

func (q *quorum) drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

func (q *quorum) close() {
	for _, p := range q.nodes {
		p.close()
	}
}
