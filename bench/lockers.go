package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockkit/lockkit/core"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// Locker is what every scenario drives: take the lock on key (waiting as
// the library waits), return how to give it back.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(context.Context) error, err error)
	Close()
}

// lockerSpec builds one library's Locker on a Redis address.
type lockerSpec struct {
	name string
	// contendedOnly: a floor that cannot wait (bare SET NX) runs only uncontended scenarios.
	uncontendedOnly bool
	// goRedis: round trips are counted with a go-redis hook (not for rueidis).
	goRedis bool
	// topLevel names the commands the library sends, for a library whose
	// client has no go-redis hook to record them (see serverTime).
	topLevel []string
	mk       func(addr string, rtt *rttCounter) (Locker, error)
}

const ttl = 10 * time.Second

func goRedisClient(addr string, rtt *rttCounter) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 128, MaxRetries: -1})
	if rtt != nil {
		rdb.AddHook(rtt)
	}
	return rdb
}

var specs = []lockerSpec{
	{name: "lockkit", goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		rdb := goRedisClient(addr, rtt)
		c, err := core.New(rdb, core.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return &lockkitLocker{c: c, rdb: rdb}, nil
	}},
	{name: "redsync", goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		// Default retry delay (50-250 ms random); tries raised so waiters do not
		// give up during the run (the default 32 tries fail under contention).
		return newRedsync(addr, rtt, redsync.WithTries(1<<30))
	}},
	{name: "redsync-1ms", goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		return newRedsync(addr, rtt, redsync.WithTries(1<<30), redsync.WithRetryDelay(time.Millisecond))
	}},
	{name: "redislock-linear", goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		return newRedislock(addr, rtt, redislock.LinearBackoff(time.Millisecond))
	}},
	{name: "redislock-exp", goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		return newRedislock(addr, rtt, redislock.ExponentialBackoff(time.Millisecond, 64*time.Millisecond))
	}},
	{name: "rueidislock", topLevel: []string{"evalsha", "eval"}, mk: func(addr string, _ *rttCounter) (Locker, error) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true},
			KeyMajority:  1, // one Redis instance, as the rueidislock README says
			// NoLoopTracking stays off: with it, a process is not told of its
			// own releases, and waiters sharing the Locker with the holder
			// sleep until the next extend interval.
			KeyValidity: ttl,
		})
		if err != nil {
			return nil, err
		}
		return rueidisLocker{l}, nil
	}},
	{name: "bare-setnx", uncontendedOnly: true, goRedis: true, mk: func(addr string, rtt *rttCounter) (Locker, error) {
		return &bareLocker{rdb: goRedisClient(addr, rtt)}, nil
	}},
}

type lockkitLocker struct {
	c   *core.Client
	rdb *redis.Client
}

func (l *lockkitLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lease, err := l.c.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return lease.Release, nil
}
func (l *lockkitLocker) Close() { _ = l.c.Close(); _ = l.rdb.Close() }

type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
	rdb  *redis.Client
}

func newRedsync(addr string, rtt *rttCounter, opts ...redsync.Option) (Locker, error) {
	rdb := goRedisClient(addr, rtt)
	return &redsyncLocker{rs: redsync.New(goredis.NewPool(rdb)), opts: append(opts, redsync.WithExpiry(ttl)), rdb: rdb}, nil
}

func (l *redsyncLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errors.New("redsync: unlock failed")
		}
		return err
	}, nil
}
func (l *redsyncLocker) Close() { _ = l.rdb.Close() }

type redislockLocker struct {
	c    *redislock.Client
	opts *redislock.Options
	rdb  *redis.Client
}

func newRedislock(addr string, rtt *rttCounter, rs redislock.RetryStrategy) (Locker, error) {
	rdb := goRedisClient(addr, rtt)
	return &redislockLocker{c: redislock.New(rdb), opts: &redislock.Options{RetryStrategy: rs}, rdb: rdb}, nil
}

func (l *redislockLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lk, err := l.c.Obtain(ctx, key, ttl, l.opts)
	if err != nil {
		return nil, err
	}
	return lk.Release, nil
}
func (l *redislockLocker) Close() { _ = l.rdb.Close() }

type rueidisLocker struct{ l rueidislock.Locker }

func (r rueidisLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { cancel(); return nil }, nil
}
func (r rueidisLocker) Close() { r.l.Close() }

// bareLocker is the floor: SET NX PX + DEL, no owner check, no waiting.
type bareLocker struct {
	rdb *redis.Client
	n   atomic.Int64
}

func (l *bareLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	val := fmt.Sprint(l.n.Add(1), rand.Int64())
	ok, err := l.rdb.SetNX(ctx, key, val, ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("bare: held")
	}
	return func(ctx context.Context) error { return l.rdb.Del(ctx, key).Err() }, nil
}
func (l *bareLocker) Close() { _ = l.rdb.Close() }

// rttCounter counts round trips: one per command, one per pipeline. It also
// records the names of the commands sent, so that the server time of a run
// counts what the library sent and not, a second time, the commands its
// scripts call (see serverTime).
type rttCounter struct {
	n    atomic.Int64
	sent sync.Map // lower-case command name → struct{}
}

func (c *rttCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *rttCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		c.record(cmd)
		return next(ctx, cmd)
	}
}
func (c *rttCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		for _, cmd := range cmds {
			c.record(cmd)
		}
		return next(ctx, cmds)
	}
}

// record notes cmd's name, storing only a name not seen yet: the hook runs
// on every command of every library, and must add nothing to their
// allocations per cycle.
func (c *rttCounter) record(cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	if _, ok := c.sent.Load(name); !ok {
		c.sent.Store(name, struct{}{})
	}
}

// names is what the library sent, or the spec's list.
func (c *rttCounter) names(sp lockerSpec) []string {
	if len(sp.topLevel) > 0 {
		return sp.topLevel
	}
	var out []string
	c.sent.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	return out
}
