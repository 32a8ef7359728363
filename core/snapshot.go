package core

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"time"
)

// HashKey is a short, stable stand-in for a lock key where the key itself
// must not be shown (telemetry, debug pages): the hex of the first 8 bytes
// of its SHA-256. It is otellock's KeyHashed value too, so a key on a debug
// page can be matched with the same key on a dashboard.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// LockState is one lock this Client holds or waits for, as Locks reads it:
// what a debug page shows about the process's own locks.
type LockState struct {
	// Key is the lock key as given to Acquire.
	Key string
	// Kind is KindMutex, KindSemaphore, KindRead or KindWrite: what is held,
	// or waited for. The two sides of a read/write lock are listed apart,
	// and a Client holding several permits of one semaphore lists one
	// LockState each (its waiters on the last of them).
	Kind string
	// Name is the telemetry name of the holding lease (empty when not held
	// by this Client, or when none was given).
	Name string
	// Held: a lease of this Client holds the lock (a root lease: reentrant
	// ones nested in it are not listed).
	Held bool
	// Token is the holding lease's fencing token (0 when not held).
	Token int64
	// AcquiredAt is when the holding lease was taken; Until its local
	// validity deadline (Lease.Until) and TTL its TTL. Zero when not held.
	AcquiredAt, Until time.Time
	TTL               time.Duration
	// Waiters is how many callers of this Client wait in its local queue
	// for the lock; OldestWait is when the longest-waiting one queued
	// (zero when none). Waiters of other processes are not counted.
	Waiters    int
	OldestWait time.Time
	// WaitingNames are the telemetry names (Name) the waiters gave, each
	// once, in queue order, at most maxWaitingNames of them: which routes
	// wait. Waiters without a name are counted in Waiters only.
	WaitingNames []string
	// Holder is the holder the waiters wait for, as far as this Client
	// knows it: the holder Redis last named to the queue's head (owner,
	// fencing token, metadata, when it was seen). Zero when the lock is
	// held by this Client (Held) or no holder was seen yet.
	Holder Holder
}

// maxWaitingNames bounds LockState.WaitingNames: names are route
// templates, few per key; a caller that names its acquires after the
// request cannot make a page list thousands.
const maxWaitingNames = 8

// Locks lists the locks this Client holds or waits for now, sorted by key.
// It is bounded by the Client's own callers (one entry per key they hold or
// queue for), takes the Client's locks only briefly, one after the other,
// and allocates only here; the list is a moment's picture, not a
// consistent cut across keys.
func (c *Client) Locks() []LockState {
	byKey := map[string]int{} // local queue (key, and side) → index in out
	var out []LockState

	c.ren.mu.Lock()
	for _, l := range c.ren.h {
		byKey[l.names.queue] = len(out)
		out = append(out, LockState{
			Key: l.key, Kind: l.kind(), Name: l.name, Held: true, Token: l.fence,
			AcquiredAt: l.acquiredAt, Until: l.deadline(), TTL: l.ttl,
		})
	}
	c.ren.mu.Unlock()

	c.qmu.Lock()
	for rkey, q := range c.queues {
		if len(q.waiters) == 0 {
			continue
		}
		i, ok := byKey[rkey]
		if !ok {
			i = len(out)
			out = append(out, LockState{Key: q.names.user, Kind: q.names.side.kind()})
		}
		s := &out[i]
		s.Waiters = len(q.waiters)
		for _, w := range q.waiters {
			if s.OldestWait.IsZero() || w.since.Before(s.OldestWait) {
				s.OldestWait = w.since
			}
			if w.name != "" && len(s.WaitingNames) < maxWaitingNames && !slices.Contains(s.WaitingNames, w.name) {
				s.WaitingNames = append(s.WaitingNames, w.name)
			}
		}
		if !s.Held && q.seen > 0 {
			s.Holder = q.holder
		}
	}
	c.qmu.Unlock()

	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
