package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxPermits bounds a semaphore's number of permits: every attempt on a
// semaphore reads all of its holders, so n is a concurrency limit, not a
// counter.
const MaxPermits = 1024

// lockKind is the Redis structure a lease lives in.
type lockKind uint8

const (
	kindMutex     lockKind = iota // the lock hash (acquire.lua and friends)
	kindSemaphore                 // a shared hash of permits (shared_*.lua)
	kindRW                        // a shared hash of readers or one writer
)

func (k lockKind) extendScript() *script {
	if k == kindMutex {
		return extendScript
	}
	return sharedExtendScript
}

// sharedMode is what one attempt on a shared hash asks for.
type sharedMode byte

const (
	modePermit sharedMode = 's'
	modeRead   sharedMode = 'r'
	modeWrite  sharedMode = 'w'
)

// The kinds of lock an Observer is told of (AcquireInfo.Kind, LeaseInfo.Kind).
const (
	KindMutex     = "mutex"
	KindSemaphore = "semaphore"
	KindRead      = "read"
	KindWrite     = "write"
)

func (m sharedMode) kind() string {
	switch m {
	case modePermit:
		return KindSemaphore
	case modeRead:
		return KindRead
	case modeWrite:
		return KindWrite
	}
	return KindMutex
}

// Semaphore is a per-key concurrency limit: at most N leases on its key at
// once, across every process that uses the same N. Take one from
// Client.Semaphore; it holds no state of its own and no connection.
//
// A permit is a Lease like a mutex's: renewed by the Client, lost (its
// Context cancelled with cause ErrLost) when a renewal finds it gone or its
// local deadline passes, released by Release. A holder that crashed frees
// its permit when its TTL ends: every permit expires on its own on the
// server. Waiting is by notification: each release wakes the waiters of the
// key, which try again, and a permit that frees goes to the one that has
// waited longest (in any process), not to a newcomer.
//
// Changing N is defined per attempt: an attempt is admitted when fewer
// than its own N permits are held, whatever N the holders used. Raising N
// admits more at once; lowering it admits nobody until the holders in
// excess have released (none of them is revoked). Two parts of a fleet
// using different N each enforce their own, so the smaller one is never
// exceeded by its own callers but may see the larger one's.
//
// Lease.Token on a permit is a fencing token as on a mutex, but holders are
// legitimately concurrent: tokens order the grants (a later grant has a
// larger token, across every holder of the key), they do not exclude. A
// resource that must refuse a write from a permit that has lost its place
// needs a different check than "token newer than the last one".
type Semaphore struct {
	c   *Client
	key string
	n   int
}

// Semaphore returns the semaphore of n permits on key. A semaphore, a
// read/write lock and a mutex of the same key are different locks. Key and
// n are checked by Acquire (ErrInvalidKey, ErrInvalidOption).
func (c *Client) Semaphore(key string, n int) *Semaphore {
	return &Semaphore{c: c, key: key, n: n}
}

// Key returns the semaphore's key; N its number of permits.
func (s *Semaphore) Key() string { return s.key }

// N returns the number of permits.
func (s *Semaphore) N() int { return s.n }

// Acquire takes a permit, waiting while all n are held, with the same
// options, errors and wait budget as Client.Acquire. It returns
// ErrNotAcquired (a *NotAcquiredError naming the holder whose permit frees
// first) when the budget runs out or, with NoWait, at once; ErrUnsupported
// on a Redlock Client; ErrWouldDeadlock when ctx already holds a permit of
// this semaphore (Reentrant does not apply).
func (s *Semaphore) Acquire(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return s.c.acquireShared(ctx, s.key, modePermit, s.n, false, opts)
}

// TryAcquire makes exactly one attempt.
func (s *Semaphore) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return s.c.acquireShared(ctx, s.key, modePermit, s.n, true, opts)
}

// RWLock is a read/write lock on a key: many readers or one writer, served
// in the order they began to wait. Once a writer waits, no reader that
// comes after it is admitted: a writer under a continuous stream of readers
// gets the lock when the readers already in have released (or expired),
// not never. And once a reader waits, no writer that comes after it is
// admitted: readers queued behind a writer go in together when it
// releases, before the writers queued after them, so a stream of writers
// does not starve readers either. Take one from Client.RWLock.
//
// Both sides are Leases like a mutex's (renewal, ErrLost, fencing tokens
// that order grants across readers and writers alike: a writer's token is
// larger than every earlier reader's and writer's).
type RWLock struct {
	c   *Client
	key string
}

// RWLock returns the read/write lock on key.
func (c *Client) RWLock(key string) *RWLock { return &RWLock{c: c, key: key} }

// Key returns the lock's key.
func (rw *RWLock) Key() string { return rw.key }

// RLock takes the read side: shared with other readers, waiting while a
// writer holds the lock or waits for it. Options and errors as
// Client.Acquire (ErrUnsupported on Redlock, ErrWouldDeadlock when ctx
// already holds either side of this lock).
func (rw *RWLock) RLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return rw.c.acquireShared(ctx, rw.key, modeRead, 0, false, opts)
}

// Lock takes the write side: alone, waiting for every holder to release.
// While it waits, readers that come after it wait behind it.
func (rw *RWLock) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return rw.c.acquireShared(ctx, rw.key, modeWrite, 0, false, opts)
}

// TryRLock and TryLock make exactly one attempt.
func (rw *RWLock) TryRLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return rw.c.acquireShared(ctx, rw.key, modeRead, 0, true, opts)
}

// TryLock makes exactly one attempt on the write side; a refused TryLock
// (or TryRLock, or NoWait) leaves no mark: nobody is held back by it.
func (rw *RWLock) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return rw.c.acquireShared(ctx, rw.key, modeWrite, 0, true, opts)
}

// sharedNames are the Redis names of key's semaphore or read/write lock.
func (c *Client) sharedNames(key string, m sharedMode) redisNames {
	if m == modePermit {
		n := c.namesIn(key, "sk:", "sh:")
		n.kind = kindSemaphore
		return n
	}
	n := c.namesIn(key, "rk:", "rh:")
	n.kind = kindRW
	return n
}

// acquireShared is Acquire for the shared kinds. It shares the attempt,
// the errors and the lease with a mutex's acquire; what differs is the
// wait: holders are many, so there is no local queue with a single head
// and no hand-off. Every caller waiting on the key attempts on its own
// after each wake-up (sharedWait).
func (c *Client) acquireShared(ctx context.Context, key string, m sharedMode, limit int, try bool, opts []AcquireOption) (*Lease, error) {
	return c.acquireSharedFrom(ctx, key, m, limit, try, acquireConfig{ttl: c.cfg.ttl}, opts)
}

// acquireSharedFrom is acquireShared with base as the settings opts change.
func (c *Client) acquireSharedFrom(ctx context.Context, key string, m sharedMode, limit int, try bool, base acquireConfig, opts []AcquireOption) (*Lease, error) {
	if err := c.usable(key); err != nil {
		return nil, err
	}
	if _, ok := c.b.(*primary); !ok {
		return nil, fmt.Errorf("%w: a %s on a Redlock Client", ErrUnsupported, m.kind())
	}
	if m == modePermit && (limit < 1 || limit > MaxPermits) {
		return nil, fmt.Errorf("%w: a semaphore has 1 to %d permits, got %d", ErrInvalidOption, MaxPermits, limit)
	}
	cfg, err := acquireConfigFrom(base, opts)
	if err != nil {
		return nil, err
	}
	n := c.sharedNames(key, m)
	if outer := c.heldIn(ctx, n.key); outer != nil {
		return nil, fmt.Errorf("%w: %q (%s)", ErrWouldDeadlock, key, m.kind())
	}
	a := &acquisition{}
	c.begin(a, ctx, key, n, cfg, try, m, limit)
	if try || cfg.noWait {
		var ok bool
		if ok, err = a.attempt(a.octx); err == nil && !ok {
			err = a.notAcquired(a.holder)
		}
	} else {
		a.req.wait = true
		err = a.waitShared()
	}
	return a.end(err)
}

// waitShared attempts until the shared lock is granted. Between attempts
// it waits for a wake-up of the key (a release message, a (re)confirmed
// subscription) or its fallback timer: the time until the first holder's
// permit expires, and at most queueRefresh, so its mark (its place in the
// order) stays alive while it waits.
func (a *acquisition) waitShared() (err error) {
	c := a.c
	var budget <-chan struct{}
	actx := a.octx
	if !a.budget.IsZero() {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(a.octx, a.budget)
		defer cancel()
		budget = actx.Done()
	}
	var sw *sharedWait
	var fallback *time.Timer
	defer func() {
		if fallback != nil {
			fallback.Stop()
		}
		if sw != nil {
			c.leaveShared(a.names.key, sw)
		}
		if err != nil && a.attempts > 0 {
			c.releaseLater(a.names, a.req.token) // a waiter that gave up drops its mark
		}
	}()
	var woken <-chan struct{}
	for {
		ok, err := a.attempt(actx)
		if errors.Is(err, errLateReply) && ctxEnded(actx) == nil {
			continue
		}
		if err != nil || ok {
			return err
		}
		if sw == nil {
			var joined bool
			if sw, woken, joined, err = c.joinShared(a.names); err != nil {
				return err
			}
			if joined {
				// Others of this Client were subscribed already: a release
				// between our attempt and now woke only them. Ask again.
				continue
			}
		}
		retry := c.b.retryDelay(a.last)
		retry = min(retry, queueRefresh(a.cfg.ttl)) // keeps its mark, and so its place
		if fallback == nil {
			fallback = time.NewTimer(retry)
		} else {
			fallback.Reset(retry)
		}
		took := false
		select {
		case <-woken:
		case <-sw.wake:
			took = true // this waiter took the key's wake-up: pass it on
		case <-fallback.C:
		case <-a.ctx.Done():
			return a.ctxErr()
		case <-budget:
			if ctxEnded(a.ctx) != nil {
				return a.ctxErr()
			}
			return a.budgetOver(nil)
		case <-c.closing:
			return ErrClosed
		}
		woken = c.nextWoken(sw, took)
	}
}

// sharedWait is the local side of waiting on one shared key: the waiters
// of this Client share one subscription (the notifier keeps one wake
// channel per channel), and whichever waiter receives its wake-up closes
// woken for all of them and replaces it.
type sharedWait struct {
	refs  int
	sub   waitSub
	wake  chan struct{}
	woken chan struct{}
	// what Client.Locks shows of it: the key, its kind, and since when
	// this Client has had waiters on it without a break.
	user, kind string
	since      time.Time
}

// joinShared takes a reference on rkey's subscription and returns the
// channel the next wake-up closes; joined: it existed already.
func (c *Client) joinShared(n redisNames) (sw *sharedWait, woken <-chan struct{}, joined bool, err error) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.shared == nil {
		c.shared = map[string]*sharedWait{}
	}
	sw = c.shared[n.key]
	if sw != nil {
		sw.refs++
		return sw, sw.woken, true, nil
	}
	kind := KindSemaphore
	if n.kind == kindRW {
		kind = KindRead
	}
	sw = &sharedWait{refs: 1, wake: make(chan struct{}, 1), woken: make(chan struct{}), user: n.user, kind: kind, since: time.Now()}
	if sw.sub, err = c.b.notifications().subscribe(n.channel, sw.wake, ""); err != nil {
		return nil, nil, false, err
	}
	c.shared[n.key] = sw
	return sw, sw.woken, false, nil
}

// nextWoken returns the channel the next wake-up of sw will close; took:
// this waiter received the wake-up, and wakes every other waiter first.
func (c *Client) nextWoken(sw *sharedWait, took bool) <-chan struct{} {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if took {
		close(sw.woken)
		sw.woken = make(chan struct{})
	}
	return sw.woken
}

func (c *Client) leaveShared(rkey string, sw *sharedWait) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if sw.refs--; sw.refs == 0 {
		sw.sub.unsubscribe()
		delete(c.shared, rkey)
	}
}
