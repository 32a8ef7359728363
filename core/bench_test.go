package core_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
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

// metaObserver stores a request id next to every lock it takes (Observer
// holder metadata), as a tracing Observer stores its trace id.
type metaObserver struct{ core.NopObserver }

func (metaObserver) HolderMetadata(context.Context, core.AcquireInfo) string {
	return "trace=4bf92f3577b34da6a3ce929d0e0e4736"
}

// The cost of each feature on the uncontended cycle, side by side in one
// run: each variant against "default" (renewal on, no Observer).
//
// This VM's speed drifts by tens of per cent within a minute, more than any
// feature costs, so the variants take turns (testkit.Turns: blocks of 50
// cycles, a few milliseconds each) rather than run one after the other, and
// the ratios to default hold. The variants share one redis-server, but for
// replica-ack, whose server has a replica (its stream would load the
// others' server).
//
// Metrics: <name>-us, the time per cycle as the caller sees it;
// <name>-vs-default, that time over default's; and, measured before the
// timed part one variant at a time (they do not drift), <name>-allocs, the
// allocations per cycle (testing.AllocsPerRun), and <name>-redis-us, the
// server's own time per cycle (INFO commandstats of the scripts and WAIT,
// over 2000 cycles). Features always on (fencing, the lost-lease signal,
// the wait queue's bookkeeping) are part of every row; their server share
// is in the scripts' inner commands.
func BenchmarkFeatureCost(b *testing.B) {
	type variant struct {
		name   string
		client []core.Option
		opts   []core.AcquireOption
		// replica: the variant's server has a replica in sync.
		replica bool

		srv     *redistest.Server
		c       *core.Client
		key     string
		allocs  float64
		redisUs float64
	}
	vs := []*variant{
		{name: "default"},
		{name: "no-renewal", opts: []core.AcquireOption{core.NoRenew()}},
		{name: "wait-budget", opts: []core.AcquireOption{core.Wait(10 * time.Second)}},
		{name: "reentrant", opts: []core.AcquireOption{core.Reentrant()}},
		{name: "holder-metadata", client: []core.Option{core.WithObserver(metaObserver{})}},
		{name: "replica-ack", client: []core.Option{core.WithReplicaAck(1, time.Second)}, replica: true},
	}
	ctx := context.Background()
	cycle := func(v *variant) {
		l, err := v.c.Acquire(ctx, v.key, v.opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	shared := redistest.Start(b)
	for _, v := range vs {
		v.srv, v.key = shared, "cost:"+v.name
		if v.replica {
			v.srv = redistest.Start(b)
			startAckingReplica(b, v.srv)
		}
		v.c = newClient(b, v.srv, v.client...)
	}
	// Settle (scripts loaded, connections dialled, the first slow cycles
	// over), then what does not drift, one variant at a time.
	for range 500 {
		for _, v := range vs {
			cycle(v)
		}
	}
	for _, v := range vs {
		v.allocs = testing.AllocsPerRun(500, func() { cycle(v) })
		const n = 2000
		us0 := commandUsec(b, v.srv.Client)
		for range n {
			cycle(v)
		}
		v.redisUs = (commandUsec(b, v.srv.Client) - us0) / n
	}
	const block = 50
	took := testkit.Turns(b, len(vs), block, func(i int) { cycle(vs[i]) })
	n := float64(b.N * block)
	for i, v := range vs {
		b.ReportMetric(took[i].Seconds()*1e6/n, v.name+"-us")
		b.ReportMetric(float64(took[i])/float64(took[0]), v.name+"-vs-default")
		b.ReportMetric(v.allocs, v.name+"-allocs")
		b.ReportMetric(v.redisUs, v.name+"-redis-us")
	}
}

// commandUsec is the server time of the commands the engine sends so far
// (INFO commandstats: EVALSHA, EVAL and WAIT; a script's line includes the
// commands it runs, which Redis 7.0 also lists on their own lines), in
// microseconds.
func commandUsec(b *testing.B, rdb *redis.Client) float64 {
	st, err := redistest.CommandStats(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return st["evalsha"].Usec + st["eval"].Usec + st["wait"].Usec
}
