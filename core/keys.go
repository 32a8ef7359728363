package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxKeyLen is the longest key Acquire accepts, in bytes. Longer keys are
// rejected with ErrInvalidKey: a lock key names a resource, it is not a payload.
const MaxKeyLen = 64 << 10

// The storage layout (not API: docs/key-layout.md and
// the package documentation's "Stability" say what is promised about it).
const (
	// hashKeyLen: keys longer than this many bytes are stored under their
	// SHA-256 instead of verbatim, so Redis keys and channels stay short.
	hashKeyLen = 200
	// layoutVersion is the version of the Redis key layout below. Two lockkit
	// versions with the same layoutVersion share the same locks, which is what
	// a rolling deploy needs; a change of layout gets a new version.
	//
	// It stayed v1 when cluster clients moved their notifications to shard
	// channels: no key changed, only the channel a release is announced on,
	// and a channel holds no state. Old and new clients keep taking the same
	// lock hash, so exclusion and fencing hold across a rolling deploy by
	// construction; what differs is only who hears whose release (see below).
	layoutVersion = "v1"
)

// Redis key layout, version v1 (prefix defaults to "lockkit"):
//
//	<prefix>:v1:k:<key>        lock hash for a key of at most hashKeyLen bytes (verbatim, binary safe)
//	<prefix>:v1:h:<sha256hex>  lock hash for a longer key
//	<prefix>:v1:c:<same tail>  pub/sub channel announcing releases (a channel, not a key)
//
// Release notifications depend on the client:
//
//   - a *redis.Client (standalone, sentinel failover) and every Redlock node:
//     PUBLISH / SUBSCRIBE on <prefix>:v1:c:<tail>, as since v1 began.
//   - a *redis.ClusterClient: SPUBLISH / SSUBSCRIBE on a shard channel named
//     exactly like the lock hash (<prefix>:v1:k:<key> or :h:<sha256hex>).
//     Channels and keys are separate namespaces, so the name clashes with
//     nothing, and a shard channel hashes to a slot by the same rule as a key:
//     the channel lives in the lock's own slot whatever braces the user's key
//     contains. A release then reaches the one shard that owns the lock
//     instead of being broadcast over the cluster bus to every node.
//
// During a rolling deploy from a version that published on the classic
// channel in a cluster, old and new clients do not hear each other's
// releases; a waiter then acquires on its retry timer (the holder's
// remaining TTL), never early, since the lock hash they share decides.
//
// Semaphores and read/write locks (shared.go) add, under the same version
// (new names only: no existing key changed, so v1 clients share every
// mutex with clients that know them):
//
//	<prefix>:v1:sk:<key>   semaphore hash (sh:<sha256hex> for a longer key)
//	<prefix>:v1:rk:<key>   read/write lock hash (rh:<sha256hex>)
//	<prefix>:v1:c:sk:<key>, <prefix>:v1:c:rk:<key>, ...  their channels
//
// with one entry per holder, expiring on its own (shared_acquire.lua). A
// semaphore, a read/write lock and a mutex of the same key are three
// different locks.
//
// Idempotency records (claim.go) add, under the same version:
//
//	<prefix>:v1:i:<key>    record hash (ih:<sha256hex> for a longer key)
//	<prefix>:v1:c:i:<key>  its channel (on a cluster, the record's own name)
//
// A record is a lock hash (o, f, w, m, r below) whose claim expires at a
// field of its own, e, rather than with the key, plus the fingerprint p,
// the stored answer d, and k (the claim took over an expired one); see
// claim.lua. It is one key: every script of a record touches one slot.
//
// The lock hash has the fields
//
//	o  owner token of the current lease (absent, or empty once released, when free)
//	f  last fencing token (kept fenceKeep after release)
//	w  owner id of the holder        m  holder metadata (Observer)
//	r  last released (or handed-off) owner token: a re-sent release answers the same
//	qh, qt, q<seq>, i<queue id>  the wait queue of processes (acquire.lua), while any wait
//	n  set by a waiter that has no place in the wait queue (Redlock): the
//	   release announces itself; without n or queue entries it sends nothing
//
// It has the lease's TTL while held; once released, fenceKeep, or the
// lease's own expiry when that is already between fenceKeepMin and
// 3×fenceKeep away (Lease.keepsExpiry: the common case, a release without
// an expiry call). One lock is one Redis key, so all of its state lives in one
// cluster hash slot whatever braces the key contains (braces in a key only
// choose that slot, as Redis defines).
type redisNames struct {
	user    string // the key as given to Acquire (Client.Locks shows it)
	key     string // the lock hash
	channel string // release notifications
	// kind is the structure at key: a mutex's lock hash, or a shared hash
	// (semaphore, read/write lock) whose scripts differ (shared.go); side
	// is what a shared lock's callers ask for (a permit, read, write).
	kind lockKind
	side sharedMode
	// queue names this Client's local queue for the lock: the Redis key,
	// and for a read/write lock the key and the side (each side waits in
	// its own queue).
	queue string
	// key and channel boxed once as script arguments, shared by the
	// acquire, release and extend calls of one lease.
	keyArg, channelArg any
}

// namesOf is the redisNames of a lock hash and its channel, with both
// boxed as script arguments.
func namesOf(key, channel string) redisNames {
	return redisNames{key: key, channel: channel, keyArg: key, channelArg: channel}
}

func (c *Client) names(key string) redisNames {
	return c.namesIn(key, "k:", "h:")
}

// namesIn is names with the layout's tags for a key kept verbatim (short)
// and for a key stored under its hash (long).
func (c *Client) namesIn(key, short, long string) redisNames {
	kind, tail := short, key
	if len(key) > hashKeyLen {
		sum := sha256.Sum256([]byte(key))
		kind, tail = long, hex.EncodeToString(sum[:])
	}
	var n redisNames
	if c.cfg.shardChannels {
		rkey := c.cfg.prefix + ":" + layoutVersion + ":" + kind + tail
		n = namesOf(rkey, rkey) // a shard channel in the lock's own slot
	} else {
		// Both names in one allocation: "<p>:v1:<kind><tail><p>:v1:c:<kind><tail>".
		both := c.cfg.prefix + ":" + layoutVersion + ":" + kind + tail + c.cfg.prefix + ":" + layoutVersion + ":c:" + kind + tail
		split := len(c.cfg.prefix) + 1 + len(layoutVersion) + 1 + len(kind) + len(tail)
		n = namesOf(both[:split], both[split:])
	}
	n.user, n.queue = key, n.key
	return n
}

// ValidateKey reports whether key is a key lockkit takes: non-empty and at
// most MaxKeyLen bytes (ErrInvalidKey otherwise). Acquire checks it; a
// package that stores by the same keys (fence) checks it the same way.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	return nil
}

func validatePrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty prefix", ErrInvalidOption)
	case strings.ContainsAny(p, "{}"):
		// Braces would make Redis Cluster hash every lock by the prefix alone,
		// putting all locks in one slot.
		return fmt.Errorf("%w: prefix %q contains a brace", ErrInvalidOption, p)
	case len(p) > 128:
		return fmt.Errorf("%w: prefix longer than 128 bytes", ErrInvalidOption)
	}
	return nil
}
