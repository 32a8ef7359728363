package core

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// HashKeyLen is the longest key stored verbatim (tests only).
const HashKeyLen = hashKeyLen

// MaxTombstones bounds a shared lock's tombstones (tests only).
const MaxTombstones = maxTombstones

// MaxWaitingNames bounds LockState.WaitingNames (tests only).
const MaxWaitingNames = maxWaitingNames

// LayoutVersion is the Redis key layout version in every key (tests only).
const LayoutVersion = layoutVersion

// Queued reports how many callers of c wait in the local queue for key (tests only).
func Queued(c *Client, key string) int {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q := c.queues[c.names(key).key]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// KeySlot is the cluster hash slot the sharded notifier groups a channel by (tests only).
var KeySlot = keySlot

// WithClassicCluster makes a Client on a *redis.ClusterClient behave as
// versions before shard channels did: PUBLISH / SUBSCRIBE on the classic
// channel (tests of a rolling deploy only).
func WithClassicCluster() Option { return func(c *config) { c.classicCluster = true } }

// WithGiveBackHook makes c tell f every token it gives back after an
// attempt whose reply did not come, before the give-back is sent (tests
// that tell a late attempt's lock from a stranded lease).
func WithGiveBackHook(f func(key, token string)) Option {
	return func(c *config) { c.givenBack = f }
}

// RunAcquireAll runs acquireall.lua as is (tests of its idempotence).
func RunAcquireAll(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) ([]any, error) {
	return acquireAllScript.Run(ctx, rdb, keys, args...).Slice()
}

// NextFence runs nextfence.lua's next_fence on Redis: last "" is a lock
// with no last token, sec "" asks the server's TIME (tests of the rule).
func NextFence(ctx context.Context, rdb redis.Scripter, last, sec, usec string) (string, error) {
	return nextFenceScript.Run(ctx, rdb, nil, last, sec, usec).Text()
}

var nextFenceScript = redis.NewScript(nextFenceLua + `
local last, t = ARGV[1], nil
if last == '' then last = false end
if ARGV[2] ~= '' then t = {ARGV[2], ARGV[3]} end
return next_fence(last, t)`)

// QueueStates describes every local queue of c (debugging).
func QueueStates(c *Client) string {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	s := ""
	for k, q := range c.queues {
		s += fmt.Sprintf("%s held=%d waiters=%d streak=%d remote=%v inRedis=%v contended=%v\n", k, q.held, len(q.waiters), q.streak, q.remote, q.inRedis, q.contended)
	}
	return s
}

// WithSchedulerLooks calls f each time the renewal scheduler wakes to look
// at its leases (tests only).
func WithSchedulerLooks(f func()) Option { return withHooks(testHooks{tickFn: f}) }

// CompleteAgain sends the completion of the claim l once more, as go-redis
// re-sends a write whose reply was lost (MaxRetries), whatever the lease's
// local state (tests of complete.lua's idempotence and fence).
func CompleteAgain(ctx context.Context, l *Lease, payload []byte) (bool, error) {
	return l.c.b.(*primary).complete(ctx, l.names, l.token, l.fence, payload, l.retention)
}
