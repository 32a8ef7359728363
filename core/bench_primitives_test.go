package core_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkPrimitives: what each kind of lock costs against the floor and
// against lockkit's own mutex, side by side in one run on one
// redis-server (no compared peer library has a semaphore or a read/write
// lock). "uncontended" is one goroutine's acquire + release cycle;
// redis-us/cycle the server's own time for it (INFO commandstats of the
// scripts). The 3-keys rows take three locks: one Acquire after another,
// or AcquireAll (one script to take them, their releases side by side).
// "8-on-1-key" is 8 goroutines of one Client on one key with a
// 200µs critical section: the mutex and the write side serialise them, a
// semaphore of 4 or the read side admit several at once (max-inside).
func BenchmarkPrimitives(b *testing.B) {
	srv := redistest.Start(b)
	c := newClient(b, srv)
	for _, k := range kinds(c, srv.Client) {
		b.Run("uncontended/"+k.name, func(b *testing.B) {
			ctx := context.Background()
			for range 100 { // warm: scripts loaded, connections open
				if err := k.cycle(ctx, "prim:warm:"+k.name); err != nil {
					b.Fatal(err)
				}
			}
			us0 := commandUsec(b, srv.Client)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := k.cycle(ctx, "prim:"+k.name); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if k.name != "floor" {
				b.ReportMetric((commandUsec(b, srv.Client)-us0)/float64(b.N), "redis-us/cycle")
			}
		})
	}
	for _, k := range kinds(c, srv.Client) {
		if k.name == "floor" {
			continue
		}
		b.Run("8-on-1-key/"+k.name, func(b *testing.B) {
			ctx := context.Background()
			var inside, most atomic.Int32
			var wg sync.WaitGroup
			per := max(b.N/8, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if err := k.hold(ctx, "prim:hot:"+k.name, func() {
							v := inside.Add(1)
							for m := most.Load(); v > m && !most.CompareAndSwap(m, v); m = most.Load() {
							}
							// The work, long enough to overlap: a spin, since a
							// 200µs sleep wakes on the runtime's timer granularity.
							for start := time.Now(); time.Since(start) < 200*time.Microsecond; {
							}
							inside.Add(-1)
						}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(most.Load()), "max-inside")
			if m := most.Load(); m > k.limit {
				b.Fatalf("%d inside at once, limit %d", m, k.limit)
			}
		})
	}
}

type primKind struct {
	name  string
	limit int32
	hold  func(ctx context.Context, key string, fn func()) error
}

func (k primKind) cycle(ctx context.Context, key string) error {
	return k.hold(ctx, key, func() {})
}

func leaseHold(acquire func(ctx context.Context, key string) (*core.Lease, error)) func(context.Context, string, func()) error {
	return func(ctx context.Context, key string, fn func()) error {
		l, err := acquire(ctx, key)
		if err != nil {
			return err
		}
		fn()
		return l.Release(ctx)
	}
}

// kinds are the rows: the floor (SET NX PX + DEL on rdb, no owner check,
// no token) and each kind of lease on c.
func kinds(c *core.Client, rdb *redis.Client) []primKind {
	floor := func(ctx context.Context, key string, fn func()) error {
		ok, err := rdb.SetNX(ctx, key, "x", 30*time.Second).Result()
		if err != nil || !ok {
			return fmt.Errorf("SET NX: %v %w", ok, err)
		}
		fn()
		return rdb.Del(ctx, key).Err()
	}
	return []primKind{
		{name: "floor", limit: 1, hold: floor},
		{name: "mutex", limit: 1, hold: leaseHold(func(ctx context.Context, k string) (*core.Lease, error) { return c.Acquire(ctx, k) })},
		{name: "semaphore-4", limit: 4, hold: leaseHold(func(ctx context.Context, k string) (*core.Lease, error) { return c.Semaphore(k, 4).Acquire(ctx) })},
		{name: "read", limit: 8, hold: leaseHold(func(ctx context.Context, k string) (*core.Lease, error) { return c.RWLock(k).RLock(ctx) })},
		{name: "write", limit: 1, hold: leaseHold(func(ctx context.Context, k string) (*core.Lease, error) { return c.RWLock(k).Lock(ctx) })},
		{name: "3-keys-one-by-one", limit: 1, hold: func(ctx context.Context, key string, fn func()) error {
			var ls []*core.Lease
			for _, k := range []string{key + ":1", key + ":2", key + ":3"} {
				l, err := c.Acquire(ctx, k)
				if err != nil {
					return err
				}
				ls = append(ls, l)
			}
			fn()
			for _, l := range ls {
				if err := l.Release(ctx); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "3-keys-AcquireAll", limit: 1, hold: func(ctx context.Context, key string, fn func()) error {
			m, err := c.AcquireAll(ctx, []string{key + ":1", key + ":2", key + ":3"})
			if err != nil {
				return err
			}
			fn()
			return m.Release(ctx)
		}},
	}
}
