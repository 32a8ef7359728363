package core

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Request is one acquire given as values: what its AcquireOptions set,
// readable (NewRequest), plus the kind of lock, which options do not set.
// Client.AcquireRequest and AcquireAllRequest take one; it is how an adapter
// (package guard) asks for a lock, building its Request once and no option
// closures per call. The zero Request is a mutex with the defaults.
type Request struct {
	// Name is the low-cardinality telemetry name (a route template, an RPC
	// method), never part of the key.
	Name string
	// TTL is the lease's TTL; 0: the Client's (WithTTL). At least MinTTL.
	TTL time.Duration
	// Wait is the wait budget: how long to wait for a held lock before
	// ErrNotAcquired; 0: DefaultWait. NoWait excludes it.
	Wait time.Duration
	// NoWait makes one attempt, queueing behind nobody (see NoWait).
	NoWait bool

	// Limit > 0 takes a permit of the semaphore of Limit permits on the key
	// (Client.Semaphore(key, Limit)) instead of a mutex: 1 to MaxPermits.
	// 0, the default, takes the key's mutex, the lock of Client.Acquire;
	// Limit 1 admits one holder too, but is another lock than that mutex.
	Limit int
	// Side, when set, takes that side of the key's read/write lock
	// (Client.RWLock(key)) instead of a mutex. Limit and Side exclude each
	// other.
	Side Side

	// MaxWaiters bounds this Client's local queue for the key (MaxWaiters);
	// 0: unbounded.
	MaxWaiters int
	// Reentrant: an acquire of a key the context already holds is nested
	// (Reentrant). Mutexes only.
	Reentrant bool
	// NoRenew holds the lock until its TTL without renewal (NoRenew).
	NoRenew bool
	// MaxHold bounds how long the lease is held (MaxHold); 0: no bound.
	MaxHold time.Duration
	// FailOpen says the caller runs its work without the lock when Redis is
	// unavailable (FailsOpen); AcquireRequest then tells the Observer
	// (Observer.Unlocked) as it returns the error.
	FailOpen bool
}

// Side is a side of a read/write lock. The zero Side is none: a mutex, or
// a semaphore with Request.Limit.
type Side uint8

// The sides of a read/write lock.
const (
	// ReadSide is shared with other readers (RWLock.RLock).
	ReadSide Side = iota + 1
	// WriteSide is alone (RWLock.Lock).
	WriteSide
)

func (s Side) String() string {
	switch s {
	case 0:
		return "none"
	case ReadSide:
		return "read"
	case WriteSide:
		return "write"
	}
	return fmt.Sprintf("Side(%d)", uint8(s))
}

// NewRequest returns the Request opts make of the zero Request: what each
// option sets, readable. The adapters read it to refuse, in their
// AcquireOptions, options that would override one of their own.
func NewRequest(opts ...AcquireOption) Request {
	var r Request
	for _, o := range opts {
		o(&r)
	}
	return r
}

// CheckTTL is the rule of every TTL lockkit takes (WithTTL, TTL, the
// adapters' TTL option): at least MinTTL, below which a renewal could not be
// confirmed before the lease expires. The error matches ErrInvalidOption.
func CheckTTL(d time.Duration) error {
	if d < MinTTL {
		return fmt.Errorf("%w: TTL must be at least %v (core.MinTTL), got %v", ErrInvalidOption, MinTTL, d)
	}
	return nil
}

// Check reports the first value of r that no acquire could honour, with an
// error matching ErrInvalidOption: a TTL other than 0 below MinTTL; a
// negative Wait, MaxHold, MaxWaiters or Limit; NoWait together with a Wait; a Limit
// above MaxPermits; an unknown Side; Limit and Side together. Every acquire
// checks its Request; an adapter checks its own once, when it is built.
func (r Request) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	if r.TTL != 0 {
		if err := CheckTTL(r.TTL); err != nil {
			return fmt.Errorf("%w (0: the Client's)", err)
		}
	}
	switch {
	case r.Wait < 0:
		return bad("Wait must be ≥ 0 (0: the default %v), got %v", DefaultWait, r.Wait)
	case r.NoWait && r.Wait > 0:
		return bad("both NoWait and Wait(%v) given; choose one", r.Wait)
	case r.MaxHold < 0:
		return bad("MaxHold must be ≥ 0 (0: no bound), got %v", r.MaxHold)
	case r.MaxWaiters < 0:
		return bad("MaxWaiters must be ≥ 0 (0: unbounded), got %d", r.MaxWaiters)
	case r.Limit < 0, r.Limit > MaxPermits:
		return bad("Limit must be 1 to %d (0: a mutex), got %d", MaxPermits, r.Limit)
	case r.Side > WriteSide:
		return bad("unknown %v", r.Side)
	case r.Limit > 0 && r.Side != 0:
		return bad("Limit and a read/write side are alternatives; choose one")
	}
	return nil
}

// FailsOpen reports whether a caller that made r runs without the lock
// after err, the acquire's error on ctx: only when r.FailOpen and Redis
// did not answer (OutcomeUnavailable). Never for a lock seen held, an
// ended ctx, a bad key or a closed Client: running then would run beside
// the lock's holder, for nobody, or on a misconfiguration.
func (r Request) FailsOpen(ctx context.Context, err error) bool {
	return r.FailOpen && err != nil && Classify(ctx, err) == OutcomeUnavailable
}

// AcquireRequest takes the lock r describes on key: a mutex (Acquire), a
// permit of a semaphore (r.Limit, Semaphore.Acquire), or a side of a
// read/write lock (r.Side, RWLock.RLock and Lock), with r's settings and
// the errors of those calls. When r.FailsOpen(ctx, err) it tells the
// Observer (Unlocked) before returning err: the caller runs unlocked.
func (c *Client) AcquireRequest(ctx context.Context, key string, r Request) (*Lease, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	base := r.config(c.cfg.ttl)
	var l *Lease
	var err error
	switch {
	case r.Limit > 0:
		l, err = c.acquireSharedFrom(ctx, key, modePermit, r.Limit, false, base, nil)
	case r.Side == ReadSide:
		l, err = c.acquireSharedFrom(ctx, key, modeRead, 0, false, base, nil)
	case r.Side == WriteSide:
		l, err = c.acquireSharedFrom(ctx, key, modeWrite, 0, false, base, nil)
	default:
		l, err = c.acquireFrom(ctx, key, false, base, nil)
	}
	if err != nil {
		c.failOpen(ctx, key, r, err)
	}
	return l, err
}

// kind is what r takes, as the Observer names it.
func (r Request) kind() string {
	switch {
	case r.Limit > 0:
		return KindSemaphore
	case r.Side == ReadSide:
		return KindRead
	case r.Side == WriteSide:
		return KindWrite
	}
	return KindMutex
}

// AcquireAllRequest takes the locks on every key, all or nothing, as
// AcquireAll does, with r's settings. Several keys are taken as mutexes:
// a Limit or a Side is refused (ErrInvalidOption).
func (c *Client) AcquireAllRequest(ctx context.Context, keys []string, r Request) (*MultiLease, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if r.Limit > 0 || r.Side != 0 {
		return nil, fmt.Errorf("%w: several keys are taken together as mutexes; Limit and a read/write side take one key", ErrInvalidOption)
	}
	m, err := c.acquireAllFrom(ctx, keys, r.config(c.cfg.ttl), nil)
	if err != nil {
		c.failOpen(ctx, strings.Join(keys, ", "), r, err)
	}
	return m, err
}

// failOpen tells the Observer of a run without the lock when r fails open
// on err.
func (c *Client) failOpen(ctx context.Context, key string, r Request, err error) {
	if r.FailsOpen(ctx, err) {
		c.obs.Unlocked(ctx, AcquireInfo{Key: key, Name: r.Name, Wait: r.Wait, Start: time.Now(), Owner: c.cfg.owner, Kind: r.kind(), Limit: r.Limit}, err)
	}
}
