package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxKeysPerAcquire bounds the keys of one AcquireAll: a request locks a
// few resources (the two accounts of a transfer), not a table.
const MaxKeysPerAcquire = 64

// MultiLease is a hold of several locks at once (AcquireAll): one Lease per
// key, taken all or nothing. It is whole only while every one of them is
// held: its Context ends as soon as any of them ends (cause ErrLost when
// one was lost), and the work it protects must stop then, because another
// holder may already have the lost key. Release releases them all. A
// MultiLease is safe for concurrent use.
type MultiLease struct {
	keys   []string
	leases []*Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	stops  []func() bool

	mu       sync.Mutex
	released bool
}

// Keys returns the keys in the canonical order they were taken in.
func (m *MultiLease) Keys() []string { return slices.Clone(m.keys) }

// Leases returns the leases, in the order of Keys.
func (m *MultiLease) Leases() []*Lease { return slices.Clone(m.leases) }

// Lease returns the lease of key (nil when key is not one of Keys).
func (m *MultiLease) Lease(key string) *Lease {
	if i := slices.Index(m.keys, key); i >= 0 {
		return m.leases[i]
	}
	return nil
}

// Context ends when the first of the leases ends: on Release
// (context.Canceled), on the loss of any one (cause ErrLost), on Close
// (ErrClosed). It carries the values of the last lease's context.
func (m *MultiLease) Context() context.Context { return m.ctx }

// Done is Context().Done().
func (m *MultiLease) Done() <-chan struct{} { return m.ctx.Done() }

// Err is nil while every lease is held; otherwise the first ended lease's
// Err (ErrLost when one was lost, ErrNotHeld after Release).
func (m *MultiLease) Err() error {
	for _, l := range m.leases {
		if err := l.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Bind returns a context for the work under all the locks: ctx's
// cancellation joined with every lease's; LeaseFromContext finds the last
// key's lease in it and MultiLeaseFromContext this MultiLease. Call the
// returned function when the work is done.
func (m *MultiLease) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	stops := make([]context.CancelFunc, 0, len(m.leases))
	for _, l := range m.leases {
		var stop context.CancelFunc
		ctx, stop = l.Bind(ctx)
		stops = append(stops, stop)
	}
	return context.WithValue(ctx, multiLeaseKey{}, m), func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

type multiLeaseKey struct{}

// MultiLeaseFromContext returns the MultiLease whose Bind made ctx (or a
// context derived from it): a handler behind an adapter that locks several
// keys finds each key's lease, and its fencing token, with m.Lease(key).
func MultiLeaseFromContext(ctx context.Context) (*MultiLease, bool) {
	m, ok := ctx.Value(multiLeaseKey{}).(*MultiLease)
	return m, ok
}

// Release releases every lease (each as Lease.Release does, concurrently,
// so a release costs one round trip however many keys). The error joins
// the leases' errors: ErrNotHeld for a lease that was lost (and ErrLost),
// ErrUnavailable when Redis did not answer. A second Release returns
// ErrNotHeld.
func (m *MultiLease) Release(ctx context.Context) error {
	m.mu.Lock()
	if m.released {
		m.mu.Unlock()
		return fmt.Errorf("lockkit: release of %d keys: %w (already released)", len(m.keys), ErrNotHeld)
	}
	m.released = true
	m.mu.Unlock()
	for _, stop := range m.stops {
		stop()
	}
	m.cancel(context.Canceled)
	return releaseAll(ctx, m.leases)
}

// releaseAll releases leases concurrently and joins their errors.
func releaseAll(ctx context.Context, leases []*Lease) error {
	if len(leases) == 1 {
		return leases[0].Release(ctx)
	}
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() { errs[i] = l.Release(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// AcquireAll takes the locks on every key, all or nothing, and returns them
// as one MultiLease. Keys are deduplicated and taken in one canonical order
// (by their Redis names), whatever order they are given in, so two callers
// naming the same keys in opposite orders never deadlock.
//
// When every lock is on one server (a single primary, or, on a cluster,
// keys whose locks share one slot: give them one hash tag, "{acct}:1") and
// every one is free, AcquireAll is one round trip: one script takes them
// all or none. Otherwise — a lock held, keys across slots, a Redlock
// Client — it takes them one at a time in the canonical order, each as
// Acquire would (waiting in turn), and if one fails it releases those it
// took (rollback) and returns that key's error, which Classify reads as
// usual (ErrNotAcquired names its holder).
//
// The options are Acquire's. The wait budget (Wait) bounds the whole call,
// not each key; NoWait makes one attempt per key. Reentrant applies per
// key: a key the context already holds is nested. At most
// MaxKeysPerAcquire keys (ErrInvalidKey beyond, or for an empty list).
func (c *Client) AcquireAll(ctx context.Context, keys []string, opts ...AcquireOption) (*MultiLease, error) {
	return c.acquireAllFrom(ctx, keys, acquireConfig{ttl: c.cfg.ttl}, opts)
}

// acquireAllFrom is AcquireAll with base as the settings opts change.
func (c *Client) acquireAllFrom(ctx context.Context, keys []string, base acquireConfig, opts []AcquireOption) (*MultiLease, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	if len(keys) > MaxKeysPerAcquire {
		return nil, fmt.Errorf("%w: %d keys, at most %d at once", ErrInvalidKey, len(keys), MaxKeysPerAcquire)
	}
	for _, k := range keys {
		if err := c.usable(k); err != nil {
			return nil, err
		}
	}
	cfg, err := acquireConfigFrom(base, opts)
	if err != nil {
		return nil, err
	}
	return c.acquireAll(ctx, keys, cfg)
}

// DoAll runs fn holding the locks on every key (AcquireAll), as Do does for
// one: fn's context ends if any lease is lost, and every lock is released
// when fn returns or panics.
func (c *Client) DoAll(ctx context.Context, keys []string, fn func(context.Context) error, opts ...AcquireOption) (err error) {
	m, err := c.AcquireAll(ctx, keys, opts...)
	if err != nil {
		return err
	}
	fctx, stop := m.Bind(ctx)
	defer func() {
		stop()
		relErr := m.Release(context.WithoutCancel(ctx))
		switch {
		case errors.Is(relErr, ErrLost):
			err = errors.Join(err, ErrLost)
		case relErr != nil:
			err = errors.Join(err, relErr)
		}
	}()
	return fn(fctx)
}

// acquireAll is AcquireAll with its settings read: base is the settings of
// every key (its wait budget is the whole call's).
func (c *Client) acquireAll(ctx context.Context, keys []string, base acquireConfig) (*MultiLease, error) {
	type named struct {
		key   string
		names redisNames
	}
	ks := make([]named, 0, len(keys))
	for _, k := range keys {
		ks = append(ks, named{k, c.names(k)})
	}
	slices.SortFunc(ks, func(a, b named) int { return cmp.Compare(a.names.key, b.names.key) })
	ks = slices.CompactFunc(ks, func(a, b named) bool { return a.names.key == b.names.key })

	start := time.Now()
	var leases []*Lease
	if c.oneRoundTrip(ctx, len(ks), func(i int) redisNames { return ks[i].names }) {
		names := make([]redisNames, len(ks))
		keys := make([]string, len(ks))
		for i, k := range ks {
			names[i], keys[i] = k.names, k.key
		}
		ls, err := c.acquireAllAtOnce(ctx, keys, names, base, start)
		if err != nil {
			return nil, err
		}
		leases = ls // nil: not all free, take them one at a time
	}
	if leases == nil {
		for _, k := range ks {
			cfg := base
			if base.wait > 0 {
				cfg.wait = base.wait - time.Since(start)
				if cfg.wait <= 0 {
					cfg.wait = time.Nanosecond // the budget is spent: one attempt's worth
				}
			}
			l, err := c.acquireFrom(ctx, k.key, false, cfg, nil)
			if err != nil {
				if len(leases) > 0 {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.releaseTimeout)
					_ = releaseAll(rctx, leases) // rollback
					cancel()
				}
				return nil, err
			}
			leases = append(leases, l)
		}
	}
	return newMultiLease(leases), nil
}

func newMultiLease(leases []*Lease) *MultiLease {
	m := &MultiLease{leases: leases, keys: make([]string, len(leases))}
	m.ctx, m.cancel = context.WithCancelCause(context.WithoutCancel(leases[len(leases)-1].ctx))
	for i, l := range leases {
		m.keys[i] = l.key
		m.stops = append(m.stops, context.AfterFunc(l.ctx, func() { m.cancel(context.Cause(l.ctx)) }))
	}
	return m
}

// oneRoundTrip: the n locks can be taken by one script (a single primary,
// or one cluster slot), and ctx holds none of them (a nested acquire is
// Acquire's business).
func (c *Client) oneRoundTrip(ctx context.Context, n int, names func(int) redisNames) bool {
	p, ok := c.b.(*primary)
	if !ok {
		return false
	}
	_, cluster := p.rdb.(*redis.ClusterClient)
	slot := -1
	for i := range n {
		nm := names(i)
		if c.heldIn(ctx, nm.key) != nil {
			return false
		}
		if cluster {
			s := keySlot(nm.key)
			if slot >= 0 && s != slot {
				return false
			}
			slot = s
		}
	}
	return true
}

// acquireAllAtOnce runs acquireall.lua: the leases when it took every
// lock, nil (and no error) when one was held, an error when Redis failed.
// Each lease is reported to the Observer as an acquire of its own that
// made one attempt, after the fact: when the script finds a lock held,
// nothing is reported, and AcquireAll's one-at-a-time acquires report the
// wait.
func (c *Client) acquireAllAtOnce(ctx context.Context, keys []string, names []redisNames, cfg acquireConfig, start time.Time) ([]*Lease, error) {
	n := len(names)
	infos := make([]AcquireInfo, n)
	tokens, metas := make([]string, n), make([]string, n)
	rkeys := make([]string, n)
	args := make([]any, 0, 2+2*n)
	args = append(args, ms(cfg.ttl), c.cfg.owner)
	for i := range names {
		infos[i] = AcquireInfo{Key: keys[i], Name: cfg.name, Wait: cfg.wait, Start: start, Strategy: "all", Owner: c.cfg.owner, Kind: KindMutex}
		meta := c.obs.HolderMetadata(ctx, infos[i])
		if len(meta) > MaxMetadataLen {
			meta = meta[:MaxMetadataLen]
		}
		tokens[i], metas[i], rkeys[i] = newToken(), meta, names[i].key
		args = append(args, tokens[i], meta)
	}
	p := c.b.(*primary)
	sent := time.Now()
	res, err := p.run(ctx, acquireAllScript, rkeys, args...).Slice()
	giveBack := func() {
		for i := range names {
			c.releaseLater(names[i], tokens[i])
		}
	}
	if err != nil {
		if mayHaveRun(err) {
			giveBack()
		}
		if e := ctxEnded(ctx); e != nil {
			return nil, &ctxEndedError{key: keys[0], err: e}
		}
		return nil, unavailable("acquire", keys[0], err)
	}
	if len(res) == 0 || asInt(res[0]) != 1 {
		return nil, nil // one is held: AcquireAll takes them one at a time
	}
	if len(res) != n+1 {
		giveBack()
		return nil, unavailable("acquire", keys[0], fmt.Errorf("lockkit: unexpected acquireall reply %v", res))
	}
	if time.Since(sent) >= cfg.ttl-c.b.drift(cfg.ttl) { // too late to trust: give back, go one at a time
		giveBack()
		return nil, nil
	}
	leases := make([]*Lease, 0, n)
	for i := range names {
		octx := c.obs.AcquireStart(ctx, infos[i])
		fence := asInt(res[i+1])
		hctx := c.obs.AcquireEnd(octx, infos[i], AcquireResult{Outcome: OutcomeAcquired, Attempts: 1, Waited: time.Since(start), Token: fence})
		a := &acquisition{c: c, ctx: ctx, key: keys[i], names: names[i], cfg: cfg, fence: fence, sent: sent}
		a.req.token, a.req.meta = tokens[i], metas[i]
		c.localAcquired(names[i], a.asHolder())
		l, err := a.lease(hctx)
		if err != nil { // Close ran meanwhile: a.lease gave this one back
			for j := i + 1; j < n; j++ {
				c.releaseLater(names[j], tokens[j])
			}
			rctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
			_ = releaseAll(rctx, leases)
			cancel()
			return nil, err
		}
		leases = append(leases, l)
	}
	return leases, nil
}
