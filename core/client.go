package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is the lock engine. It is safe for concurrent use. One Client runs
// one renewal goroutine and, while anybody waits, one pub/sub connection,
// whatever the number of leases and waiters.
type Client struct {
	cfg config
	b   backend
	obs Observer
	// ownerArg is cfg.owner boxed once as a script argument.
	ownerArg any

	qmu    sync.Mutex
	queues map[string]*keyQueue // by local queue (redisNames.queue)

	ren *renewer

	// epoch anchors lease deadlines on the monotonic clock (Lease.deadlineNs).
	epoch time.Time

	closed    atomic.Bool
	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	bg        sync.WaitGroup // best-effort releases after ambiguous acquires
	// bgMu guards bgClosed, which Close sets before it waits for bg: a
	// WaitGroup must not gain work while Wait may be running.
	bgMu     sync.Mutex
	bgClosed bool
}

// New returns a Client on rdb: a *redis.Client (standalone or the sentinel
// failover client) or a *redis.ClusterClient. On a cluster, release
// notifications use shard channels (SPUBLISH / SSUBSCRIBE, Redis 7.0 or
// later) in each lock's own slot, so a release costs one delivery on the
// lock's shard rather than a broadcast to every node.
//
// New rejects a client that would let a context deadline go unenforced:
// go-redis needs ContextTimeoutEnabled for a ctx deadline to bound socket
// I/O, without which a hung Redis hangs every lock call for the full read
// timeout.
//
// New does no I/O; the Client leaves rdb open on Close.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if err := checkRedisClient(rdb); err != nil {
		return nil, err
	}
	return newClient(opts, func(cfg *config) (backend, error) {
		if cfg.nodeTimeout > 0 {
			return nil, fmt.Errorf("%w: WithNodeTimeout is for NewRedlock", ErrInvalidOption)
		}
		if cfg.ack.replicas > 0 {
			if _, ok := rdb.(*redis.Client); !ok {
				return nil, fmt.Errorf("%w: WithReplicaAck needs a single primary (*redis.Client): WAIT counts the replicas of the connection's server", ErrInvalidOption)
			}
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok && !cfg.classicCluster {
			cfg.shardChannels = true
			return newShardedPrimary(cc, cfg.releaseTimeout), nil
		}
		return newPrimary(rdb, cfg.ack, cfg.releaseTimeout), nil
	})
}

func newClient(opts []Option, mk func(*config) (backend, error)) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b, err := mk(&cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, b: b, obs: cfg.observer, queues: map[string]*keyQueue{}, closing: make(chan struct{}), epoch: time.Now()}
	if c.obs == nil {
		c.obs = NopObserver{}
	}
	c.ownerArg = cfg.owner
	c.ren = newRenewer(c)
	return c, nil
}

func checkRedisClient(rdb redis.UniversalClient) error {
	if r, ok := rdb.(*redis.Ring); ok && r != nil {
		return fmt.Errorf("%w: a Ring shards keys and channels independently, so release notifications would go astray; use one client per independent master with NewRedlock, or a Cluster client", ErrBadRedisClient)
	}
	return CheckDeadlines(rdb)
}

// CheckDeadlines reports whether a context deadline bounds rdb's calls:
// ErrBadRedisClient for a nil client or one whose options leave
// ContextTimeoutEnabled false (go-redis then lets a call outlive its
// context's deadline). New checks it; so does every lockkit package that
// takes a go-redis client (fence). Other implementations (wrappers) are
// trusted to honour deadlines.
func CheckDeadlines(rdb redis.UniversalClient) error {
	const fix = "set ContextTimeoutEnabled: true in its options so a context deadline bounds socket I/O"
	var enabled bool
	var opts string
	switch c := rdb.(type) {
	case nil:
		return fmt.Errorf("%w: nil client", ErrBadRedisClient)
	case *redis.Client:
		if c == nil {
			return fmt.Errorf("%w: nil client", ErrBadRedisClient)
		}
		enabled, opts = c.Options().ContextTimeoutEnabled, "redis.Options"
	case *redis.ClusterClient:
		if c == nil {
			return fmt.Errorf("%w: nil client", ErrBadRedisClient)
		}
		enabled, opts = c.Options().ContextTimeoutEnabled, "redis.ClusterOptions"
	case *redis.Ring:
		if c == nil {
			return fmt.Errorf("%w: nil client", ErrBadRedisClient)
		}
		enabled, opts = c.Options().ContextTimeoutEnabled, "redis.RingOptions"
	default:
		return nil
	}
	if !enabled {
		return fmt.Errorf("%w: %s.ContextTimeoutEnabled is false; %s", ErrBadRedisClient, opts, fix)
	}
	return nil
}

// Close ends the Client: waiters get ErrClosed, every held lease's context is
// cancelled (cause ErrClosed) and its lock released within the release
// timeout, and every goroutine of the Client stops. Close is idempotent and
// leaves the Redis client open.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closing)
		leases := c.ren.stop()
		c.closeErr = c.releaseAll(leases)
		c.bgMu.Lock()
		c.bgClosed = true
		c.bgMu.Unlock()
		c.bg.Wait()
		c.b.close()
	})
	return c.closeErr
}

// releaseAll releases the leases Close took from the renewer, concurrently
// and within one release timeout.
func (c *Client) releaseAll(leases []*Lease) error {
	if len(leases) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, l := range leases {
		if !l.finish(stateClosed, ErrClosed) {
			continue
		}
		c.localRelease(l.names.queue) // the local queue forgets it, as a release does
		c.obs.Lost(l.ctx, l.info(), ErrClosed)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.awaitHandoff(ctx); errors.Is(err, ErrNotHeld) {
				return // the hand-off that gave it was not confirmed: not ours
			}
			if _, err := c.b.release(ctx, l.names, l.token, false); err != nil {
				mu.Lock()
				errs = append(errs, unavailable("release", l.key, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Inspect reads who holds key: Held false when free. The owner token itself
// is never returned (it is the right to release).
func (c *Client) Inspect(ctx context.Context, key string) (Holder, bool, error) {
	if err := c.usable(key); err != nil {
		return Holder{}, false, err
	}
	h, held, err := c.b.inspect(ctx, c.names(key))
	if err != nil {
		return Holder{}, false, c.callErr(ctx, "inspect", key, err)
	}
	return h, held, nil
}

// ForceRelease removes whoever holds key (an operator's escape hatch for a
// lock stuck behind a process that will not come back). The holder's lease
// is lost at its next renewal. Reports whether a holder was removed.
func (c *Client) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := c.usable(key); err != nil {
		return false, err
	}
	ok, err := c.b.forceRelease(ctx, c.names(key))
	if err != nil {
		return false, c.callErr(ctx, "force release", key, err)
	}
	return ok, nil
}

// monoNow is now on the Client's monotonic clock, in nanoseconds.
func (c *Client) monoNow() int64 { return time.Since(c.epoch).Nanoseconds() }

// Owner is the owner id this Client stores next to its locks.
func (c *Client) Owner() string { return c.cfg.owner }

func (c *Client) usable(key string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return ValidateKey(key)
}

// callErr classifies a failed Redis call: the caller's ctx ending wins
// (the error then matches ctx.Err()), anything else is ErrUnavailable.
func (c *Client) callErr(ctx context.Context, op, key string, err error) error {
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	if ctxErr := ctxEnded(ctx); ctxErr != nil {
		return fmt.Errorf("lockkit: %s %q: %w", op, key, ctxErr)
	}
	return unavailable(op, key, err)
}

// ctxEnded is ctx.Err(), or DeadlineExceeded once the deadline has passed:
// go-redis sets the socket deadline to the ctx deadline, so an I/O timeout
// can surface a moment before the ctx's own timer marks it done.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// boundedCtx gives a network call a deadline when ctx has none.
func boundedCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
