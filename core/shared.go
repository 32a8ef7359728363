package core

import (
	"context"
)

// MaxPermits bounds a semaphore's number of permits: n is a concurrency
// limit, not a counter, and the rare step that reads every holder (when
// one may have expired) reads at most that many.
const MaxPermits = 1024

// maxTombstones bounds the tombstones a semaphore's or read/write lock's
// hash keeps (shared_lib.lua, Tombstones): its newest give-backs, each of
// which makes an attempt of the token or queue still on its way take
// nothing. Beyond it the oldest goes, so a flood of callers giving up keeps
// the hash, and the steps that read all of it, bounded by what is live.
// 128 keeps every tombstone its whole life (fenceKeep, 10 s) at up to 12
// give-backs a second on one key; the rare steps that read the whole hash
// read 256 fields more at most.
const maxTombstones = 128

// lockKind is the Redis structure a lease lives in.
type lockKind uint8

const (
	kindMutex     lockKind = iota // the lock hash (acquire.lua and friends)
	kindSemaphore                 // a shared hash of permits (shared_*.lua)
	kindRW                        // a shared hash of readers or one writer
	kindRecord                    // an idempotency record's claim (claim.lua and friends)
)

func (k lockKind) extendScript() *script {
	switch k {
	case kindMutex:
		return extendScript
	case kindRecord:
		return claimExtendScript
	}
	return sharedExtendScript
}

// shared: the kind lives in a shared hash (shared_*.lua).
func (k lockKind) shared() bool { return k == kindSemaphore || k == kindRW }

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
	// KindClaim is the claim of an idempotency record (Client.Claim).
	KindClaim = "claim"
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
// server. Waiting is a mutex's: callers of one Client queue locally (per
// key, MaxWaiters bounding it) and only the head asks Redis; a refused
// head puts its process in the lock's wait queue, and a release grants the
// permit it frees to the process that has waited longest in the same step,
// waking only that one (not to a newcomer, nor to every waiter). What Redis
// does per release does not grow with the number of waiters.
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
// does not starve readers either. Each side waits as a mutex does (a local
// queue per side, the lock's wait queue in Redis, a grant at the release;
// see Semaphore). Take one from Client.RWLock.
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
// (or TryRLock, or NoWait) leaves no trace: nobody is held back by it. Nor
// does a wait that gave up: its place leaves Redis (see docs/waiting.md).
func (rw *RWLock) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return rw.c.acquireShared(ctx, rw.key, modeWrite, 0, true, opts)
}

// sharedNames are the Redis names of key's semaphore or read/write lock,
// and the local queue of side m.
func (c *Client) sharedNames(key string, m sharedMode) redisNames {
	var n redisNames
	if m == modePermit {
		n = c.namesIn(key, "sk:", "sh:")
		n.kind = kindSemaphore
	} else {
		n = c.namesIn(key, "rk:", "rh:")
		n.kind = kindRW
	}
	n.side, n.queue = m, sharedQueue(n.key, m)
	return n
}

// exclusive: a lease of this Client on n keeps the rest of its local
// queue waiting (a mutex, the write side); a permit or the read side lets
// the next caller ask while it holds.
func (n *redisNames) exclusive() bool { return n.kind == kindMutex || n.side == modeWrite }

// sharedQueue is the local queue of side m of a read/write lock: each side
// waits in its own queue (the key and a suffix no key can end in twice).
func sharedQueue(rkey string, m sharedMode) string {
	if m == modePermit {
		return rkey
	}
	return rkey + "\x00" + string(m)
}

// acquireShared is Acquire for the shared kinds: the same attempt, local
// queue, wait in Redis's queue and lease as a mutex's (acquireKind); what
// differs is what the scripts admit, and that a permit or the read side
// does not keep the rest of the local queue waiting while a lease of this
// Client holds it.
func (c *Client) acquireShared(ctx context.Context, key string, m sharedMode, limit int, try bool, opts []AcquireOption) (*Lease, error) {
	return c.acquireKind(ctx, key, m, limit, try, acquireConfig{ttl: c.cfg.ttl}, opts)
}

// acquireSharedFrom is acquireShared with base as the settings opts change.
func (c *Client) acquireSharedFrom(ctx context.Context, key string, m sharedMode, limit int, try bool, base acquireConfig, opts []AcquireOption) (*Lease, error) {
	return c.acquireKind(ctx, key, m, limit, try, base, opts)
}
