package core_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// rttCounter counts Redis round trips: one per command, one per pipeline.
type rttCounter struct{ n atomic.Int64 }

func (c *rttCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *rttCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *rttCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

func benchClient(b *testing.B) (*core.Client, *rttCounter, *redistest.Server) {
	srv := redistest.Start(b)
	rtt := &rttCounter{}
	rdb := srv.NewClient(func(o *redis.Options) { o.PoolSize = 64 })
	rdb.AddHook(rtt)
	return newClientOn(b, rdb), rtt, srv
}

// Uncontended acquire + release, one goroutine: the floor of every request.
func BenchmarkUncontendedCycle(b *testing.B) {
	c, rtt, _ := benchClient(b)
	ctx := context.Background()
	warm(b, c, ctx, "bench:1")
	rtt.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l, err := c.Acquire(ctx, "bench:1")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rtt.n.Load())/float64(b.N), "rtt/cycle")
}

// The bare minimum a lock can cost: SET NX PX + DEL, no owner check.
func BenchmarkBareSetNXDel(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := rdb.SetNX(ctx, "bare:1", "x", 30*time.Second).Result()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := rdb.Del(ctx, "bare:1").Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// 16 goroutines on one key, empty critical section: the hand-off cost
// through the local FIFO queue.
func BenchmarkHotKeyHandoff(b *testing.B) {
	c, rtt, _ := benchClient(b)
	ctx := context.Background()
	warm(b, c, ctx, "bench:hot")
	rtt.n.Store(0)
	var inside atomic.Int32
	var cycles atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := max(b.N/16, 1)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				l, err := c.Acquire(ctx, "bench:hot")
				if err != nil {
					b.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					b.Error("overlap")
				}
				inside.Add(-1)
				cycles.Add(1)
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	n := float64(cycles.Load())
	b.ReportMetric(float64(rtt.n.Load())/n, "rtt/cycle")
	b.ReportMetric(n/b.Elapsed().Seconds(), "cycles/s")
}

// Two Clients (two processes' worth) alternating on one key: every hand-off
// crosses pub/sub.
func BenchmarkCrossClientHandoff(b *testing.B) {
	c1, _, srv := benchClient(b)
	c2 := newClient(b, srv)
	ctx := context.Background()
	var wg sync.WaitGroup
	per := max(b.N/2, 1)
	b.ReportAllocs()
	for _, c := range []*core.Client{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				l, err := c.Acquire(ctx, "bench:x")
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func warm(b *testing.B, c *core.Client, ctx context.Context, key string) {
	for range 10 {
		l, err := c.Acquire(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Release(ctx)
	}
}
