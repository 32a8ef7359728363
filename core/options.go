package core

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Defaults.
const (
	DefaultTTL            = 30 * time.Second
	DefaultPrefix         = "lockkit"
	DefaultReleaseTimeout = 3 * time.Second
	// DefaultWait is the wait budget of an acquire that sets none (Wait), in
	// core and in every lockkit adapter: a caller should not wait for a lock
	// longer than its own caller waits for an answer, and a background job
	// on context.Background() should not wait for ever.
	DefaultWait = 10 * time.Second
	// MinTTL is the shortest lease TTL the engine accepts: below it a
	// renewal could not be confirmed before the lease expires.
	MinTTL = 10 * time.Millisecond
	// fenceKeep is how long a released lock hash keeps its last fencing token.
	fenceKeep = 10 * time.Second
	// fenceKeepMin: a release leaves the lease's own expiry in place when
	// at least this much of it is left (Lease.keepsExpiry).
	fenceKeepMin = time.Second
	// pubsubHealth is how often an idle notification connection is pinged.
	pubsubHealth = 10 * time.Second
)

// Option configures a Client.
type Option func(*config)

type config struct {
	prefix         string
	ttl            time.Duration
	observer       Observer
	owner          string
	releaseTimeout time.Duration
	nodeTimeout    time.Duration // Redlock: per-node call bound
	ack            replicaAck
	hooks          testHooks
	// shardChannels: release notifications use SPUBLISH / SSUBSCRIBE on the
	// lock hash's own name (a cluster client, see keys.go). Set by New.
	shardChannels bool
	// classicCluster keeps a cluster client on classic PUBLISH / SUBSCRIBE,
	// as versions before shard channels behaved (tests of rolling deploys).
	classicCluster bool
	// givenBack, when set, hears every token given back after an attempt
	// whose reply did not come (tests only: WithGiveBackHook).
	givenBack func(key, token string)
}

// replicaAck: WAIT for this many replicas after acquire and renewal.
type replicaAck struct {
	replicas int
	timeout  time.Duration
}

func defaultConfig() config {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	return config{
		prefix:         DefaultPrefix,
		ttl:            DefaultTTL,
		owner:          host + ":" + strconv.Itoa(os.Getpid()),
		releaseTimeout: DefaultReleaseTimeout,
	}
}

// WithPrefix sets the first segment of every Redis key and channel (default
// "lockkit"). Clients that must exclude each other need the same prefix.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithTTL sets the default lease TTL (default 30s; at least MinTTL). A
// renewed lease is extended every TTL/3; the TTL is how long a crashed
// holder blocks others.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithObserver installs an Observer (otellock.New() for OpenTelemetry).
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithOwner sets the owner id stored next to held locks, shown to contenders
// (default hostname:pid): 1 to 256 bytes, no control characters.
func WithOwner(id string) Option { return func(c *config) { c.owner = id } }

// WithReleaseTimeout bounds Release (and Close's releases) when the caller's
// context has no deadline (default 3s; must be > 0).
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }

// WithReplicaAck makes every acquire and renewal wait (Redis WAIT) until
// replicas replicas acknowledged it, at most timeout; fewer acknowledgements
// count as failure: the acquire is released and reported as ErrUnavailable,
// the renewal as unconfirmed (the lease is lost at its deadline if it stays
// so). Only for a single primary with replicas (standalone or sentinel).
//
// What it buys: a failover to a replica that acknowledged will not forget
// the lock. What it does not: WAIT is not consistency — the write is not
// rolled back when fewer replicas acknowledge, a replica can still be
// promoted without it (if the acknowledging ones are lost), and Redis
// persistence settings still decide what survives a restart. Releases do
// not wait: one a failover loses leaves the lock to its TTL, which delays
// the next holder but never lets two hold it.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) { c.ack = replicaAck{replicas: replicas, timeout: timeout} }
}

// WithNodeTimeout bounds each node's reply in Redlock mode (default 100ms,
// or TTL/10 when that is shorter; a larger d is refused): a node that hangs
// cannot hold an acquire up.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// validate refuses every setting the Client could not honour, with
// ErrInvalidOption, so that New fails rather than every later call.
func (c *config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	if err := validatePrefix(c.prefix); err != nil {
		return err
	}
	if err := CheckTTL(c.ttl); err != nil {
		return fmt.Errorf("WithTTL: %w", err)
	}
	switch {
	case c.releaseTimeout <= 0:
		return bad("WithReleaseTimeout must be > 0, got %v", c.releaseTimeout)
	case c.ack.replicas < 0:
		return bad("WithReplicaAck needs replicas ≥ 0, got %d", c.ack.replicas)
	case c.ack.replicas > 0 && c.ack.timeout < time.Millisecond:
		// WAIT takes whole milliseconds, and 0 would wait for ever.
		return bad("WithReplicaAck needs a timeout of at least 1ms, got %v", c.ack.timeout)
	case c.ack.replicas > 0 && c.ack.timeout >= c.ttl:
		return bad("WithReplicaAck's timeout %v is not below the TTL %v: a lease could expire while its acknowledgements are awaited", c.ack.timeout, c.ttl)
	case c.nodeTimeout < 0:
		return bad("WithNodeTimeout must be > 0, got %v", c.nodeTimeout)
	case c.nodeTimeout > c.ttl/10:
		return bad("WithNodeTimeout %v is above TTL/10 (%v): a slow node would eat the validity of every lease", c.nodeTimeout, c.ttl/10)
	case c.owner == "":
		return bad("WithOwner: an empty owner id names nobody")
	case len(c.owner) > 256:
		return bad("WithOwner: owner id longer than 256 bytes")
	}
	for i := 0; i < len(c.owner); i++ {
		if b := c.owner[i]; b < 0x20 || b == 0x7f {
			return bad("WithOwner: control character at byte %d of the owner id", i)
		}
	}
	return nil
}

// AcquireOption configures one Acquire, TryAcquire or Do: it sets a field
// of the Request the call makes (NewRequest reads what options set).
type AcquireOption func(*Request)

// acquireConfig is a Request resolved for the engine: the TTL is the
// Client's when the Request left it 0, the wait budget DefaultWait when it
// left Wait 0 without NoWait.
type acquireConfig struct {
	ttl        time.Duration
	wait       time.Duration
	noWait     bool
	name       string
	reentrant  bool
	noRenew    bool
	maxWaiters int           // 0: unbounded
	maxHold    time.Duration // 0: no bound
}

// TTL sets this lease's TTL (default: the Client's, WithTTL).
func TTL(d time.Duration) AcquireOption { return func(r *Request) { r.TTL = d } }

// Wait sets the wait budget: how long Acquire waits for a held lock before
// ErrNotAcquired. Default (and 0): DefaultWait, 10s, as in every lockkit
// adapter. ctx still bounds the wait: a budget is not a ctx timeout, its
// end gives ErrNotAcquired where the ctx's end gives ctx.Err(). To let ctx
// alone decide, give a budget longer than ctx's deadline. Wait and NoWait
// replace each other: the last one given counts.
func Wait(d time.Duration) AcquireOption {
	return func(r *Request) { r.Wait, r.NoWait = d, false }
}

// NoWait makes one attempt: Acquire fails at once with ErrNotAcquired when
// the lock is held. It does not jump the local queue: when a lease of this
// Client holds the key, or other callers of this Client queue for it, it is
// refused without asking Redis. That is what a request handler wants (a
// duplicate request is refused at once, the queued ones keep their turn),
// and what every adapter's NoWait does. TryAcquire also makes exactly one
// attempt, but asks Redis whatever the local queue holds: use it outside
// request handling, for work one instance does at a time (a periodic job
// that skips its run when another instance has the lock).
func NoWait() AcquireOption { return func(r *Request) { r.NoWait, r.Wait = true, 0 } }

// Name sets the low-cardinality telemetry name (route template, RPC method).
func Name(s string) AcquireOption { return func(r *Request) { r.Name = s } }

// Reentrant lets an acquire of a key the context already holds succeed as a
// nested lease (no Redis call). Reentrancy travels in the context: every
// goroutine sharing that context shares the lease.
func Reentrant() AcquireOption { return func(r *Request) { r.Reentrant = true } }

// NoRenew holds the lock until its TTL without renewal (job de-duplication):
// the lease's context ends, cause ErrLost, when the TTL runs out.
func NoRenew() AcquireOption { return func(r *Request) { r.NoRenew = true } }

// MaxHold bounds how long the lease is held: d after the acquire, its
// context ends with cause ErrMaxHold (Lease.Err returns it, Observer.Lost
// is told) and renewal stops. The lock itself stays held until the holder
// releases it (a handler's deferred release, as the adapters do) or, at the
// latest, until it expires, within one TTL: nobody else can take it while
// the holder still believes it holds it, since its context ended first. A
// handler a client can keep busy (a request body dribbled in, a stream
// that stays silent) then holds its key d at most, where it was renewed
// until the Client closed. 0: no bound (the default). A nested lease
// (Reentrant) ends with its outer one.
func MaxHold(d time.Duration) AcquireOption { return func(r *Request) { r.MaxHold = d } }

// MaxWaiters bounds this Client's local queue for the key: with n callers
// already waiting, Acquire fails at once with ErrNotAcquired.
func MaxWaiters(n int) AcquireOption { return func(r *Request) { r.MaxWaiters = n } }

// acquireConfigFrom applies opts to a and checks the result. Options are
// applied in a function of their own so that the call without options
// (the adapters', the common one) allocates nothing.
func acquireConfigFrom(a acquireConfig, opts []AcquireOption) (acquireConfig, error) {
	if len(opts) > 0 {
		a = applyAcquireOptions(a, opts)
	}
	if err := a.request().Check(); err != nil {
		return a, err
	}
	if a.wait == 0 && !a.noWait {
		a.wait = DefaultWait
	}
	return a, nil
}

func applyAcquireOptions(a acquireConfig, opts []AcquireOption) acquireConfig {
	r := a.request()
	for _, o := range opts {
		o(&r)
	}
	return r.config(a.ttl)
}

// request is a as the Request it resolves.
func (a acquireConfig) request() Request {
	return Request{Name: a.name, TTL: a.ttl, Wait: a.wait, NoWait: a.noWait, MaxWaiters: a.maxWaiters, Reentrant: a.reentrant, NoRenew: a.noRenew, MaxHold: a.maxHold}
}

// config resolves r with ttl as the TTL it leaves 0 (the Client's).
func (r Request) config(ttl time.Duration) acquireConfig {
	if r.TTL != 0 {
		ttl = r.TTL
	}
	return acquireConfig{ttl: ttl, wait: r.Wait, noWait: r.NoWait, name: r.Name, reentrant: r.Reentrant, noRenew: r.NoRenew, maxWaiters: r.MaxWaiters, maxHold: r.MaxHold}
}
