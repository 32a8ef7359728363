package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
)

// A herd: w callers of one key, spread over 3 replicas (each with its own
// Client), each asking once with the wait budget herdBudget, holding
// herdHold when served. What the holds allow in the budget is
// min(w, limit × herdBudget / herdHold).
const (
	herdHold   = 60 * time.Millisecond
	herdBudget = 3 * time.Second
)

// herdKind is what the herd takes: a mutex (the reference), a semaphore of
// 2, the write side of a read/write lock, or a mix of readers and writers
// (one in four a writer).
type herdKind struct {
	name  string
	limit int // holders at once (for what the holds allow); a mix counts its writers' turns
	take  func(c *core.Client, ctx context.Context, i int, opts ...core.AcquireOption) (*core.Lease, error)
	// writer reports whether caller i holds alone (the mutex's holder, a
	// writer); the others may share, at most limit of them, or any number
	// of readers beside no writer when shared is true.
	writer func(i int) bool
	shared bool
}

func always(int) bool   { return true }
func never(int) bool    { return false }
func fourth(i int) bool { return i%4 == 0 }

var herdKinds = []herdKind{
	{"mutex", 1, func(c *core.Client, ctx context.Context, _ int, o ...core.AcquireOption) (*core.Lease, error) {
		return c.Acquire(ctx, "herd", o...)
	}, always, false},
	{"semaphore-2", 2, func(c *core.Client, ctx context.Context, _ int, o ...core.AcquireOption) (*core.Lease, error) {
		return c.Semaphore("herd", 2).Acquire(ctx, o...)
	}, never, false},
	{"writers", 1, func(c *core.Client, ctx context.Context, _ int, o ...core.AcquireOption) (*core.Lease, error) {
		return c.RWLock("herd").Lock(ctx, o...)
	}, always, false},
	{"readers-writers", 1, func(c *core.Client, ctx context.Context, i int, o ...core.AcquireOption) (*core.Lease, error) {
		if i%4 == 0 {
			return c.RWLock("herd").Lock(ctx, o...)
		}
		return c.RWLock("herd").RLock(ctx, o...)
	}, fourth, true},
}

var herdSizes = []int{50, 150, 300, 600, 1500}

// BenchmarkHerd runs the herd for every size and kind on one redis-server,
// three runs each, one after the other: the herd alone, for served
// (callers that got the lock within the budget), allowed (what the holds
// allow), their ratio served/allowed (the target is ≥ 0.9; for the mix,
// allowed counts exclusive turns only, so readers sharing a turn take it
// above 1), Redis's work per served acquire, its release included: the
// server process's CPU (redis-cpu-us/served, which also counts what an idle
// server spends, under 1 ms a second here) and its ratio to the mutex's in
// the same herd (cpu-vs-mutex, the target ≤ 2), and the time of the lock's
// commands by INFO commandstats (redis-us/served) and its ratio to the
// mutex's (time-vs-mutex); then two callers locking unrelated cold keys
// one after another, alone (idle-p99-ms) and beside the herd again
// (cold-p99-ms), and the ratio of the two p99s of their acquires
// (cold-vs-idle, the target ≤ 1.5).
func BenchmarkHerd(b *testing.B) {
	srv := redistest.Start(b)
	for _, w := range herdSizes {
		var mutex, mutexCPU float64
		for _, k := range herdKinds {
			b.Run(fmt.Sprintf("W%d/%s", w, k.name), func(b *testing.B) {
				r := herdRun(b, srv, k, w, false, nil)
				idle := herdRun(b, srv, k, 0, true, nil)
				cold := herdRun(b, srv, k, w, true, nil)
				allowed := min(float64(w), float64(k.limit)*float64(herdBudget)/float64(herdHold))
				served := float64(max(r.served, 1))
				work := float64(r.redisTime.Microseconds()) / served
				cpu := float64(r.redisCPU.Microseconds()) / served
				if k.name == "mutex" {
					mutex, mutexCPU = work, cpu
				}
				b.ReportMetric(float64(r.served), "served")
				b.ReportMetric(allowed, "allowed")
				b.ReportMetric(float64(r.served)/allowed, "served/allowed")
				b.ReportMetric(work, "redis-us/served")
				b.ReportMetric(cpu, "redis-cpu-us/served")
				if mutex > 0 {
					b.ReportMetric(cpu/mutexCPU, "cpu-vs-mutex")
					b.ReportMetric(work/mutex, "time-vs-mutex")
				}
				b.ReportMetric(idle.coldP99, "idle-p99-ms")
				b.ReportMetric(cold.coldP99, "cold-p99-ms")
				b.ReportMetric(cold.coldP99/idle.coldP99, "cold-vs-idle")
			})
		}
	}
}

type herdResult struct {
	served              int
	redisCPU, redisTime time.Duration
	coldP99             float64 // ms
}

// BenchmarkHerdInstructions counts, with valgrind's callgrind on the
// server (as BenchmarkRedisInstructions does), the instructions
// redis-server runs per served acquire in the herds above (the herd alone):
// redis-instr/served, and its ratio to the mutex's in the same herd
// (vs-mutex). Unlike the microseconds of commandstats, the count does not
// depend on what else the machine does. Skipped without valgrind.
func BenchmarkHerdInstructions(b *testing.B) {
	for _, w := range herdSizes {
		var mutex float64
		for _, k := range herdKinds {
			b.Run(fmt.Sprintf("W%d/%s", w, k.name), func(b *testing.B) {
				srv := underCallgrind(b)
				var total int64
				r := herdRun(b, srv.Server, k, w, false, func(start bool) {
					if start {
						srv.zero()
					} else {
						total = srv.total()
					}
				})
				instr := float64(total) / float64(max(r.served, 1))
				if k.name == "mutex" {
					mutex = instr
				}
				b.ReportMetric(float64(r.served), "served")
				b.ReportMetric(instr, "redis-instr/served")
				if mutex > 0 {
					b.ReportMetric(instr/mutex, "vs-mutex")
				}
			})
		}
	}
}

// herdRun runs one herd of w callers of kind k for herdBudget, with the
// cold keys' caller beside it when cold; meter (if not nil) is called as
// the herd starts (true) and once it is over (false).
func herdRun(b *testing.B, srv *redistest.Server, k herdKind, w int, cold bool, meter func(start bool)) herdResult {
	ctx := context.Background()
	if err := srv.Client.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cs := replicaClients(b, srv, 3)
	defer func() {
		for _, c := range cs {
			_ = c.Close() // before the next run on srv (Close is idempotent)
		}
	}()
	// Warm up: scripts loaded, connections dialled.
	for _, c := range cs {
		for i := range 4 {
			l, err := k.take(c, ctx, i)
			if err != nil {
				b.Fatal(err)
			}
			_ = l.Release(ctx)
		}
	}
	if err := srv.Client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	if meter != nil {
		meter(true)
	}
	b.ResetTimer()
	cpu0 := redisCPU(ctx, srv.Client)
	start := time.Now()
	deadline := start.Add(herdBudget)
	var served atomic.Int64
	// The witness: callers inside, writers among them, and every entry
	// that broke the kind's rule (a writer beside anyone, a reader beside
	// a writer, more sharing holders than the limit).
	var inside, writers atomic.Int32
	var overlaps atomic.Int64
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() {
			l, err := k.take(cs[i%3], ctx, i, core.Wait(time.Until(deadline)))
			if err != nil {
				return
			}
			served.Add(1)
			alone := k.writer(i)
			if alone {
				writers.Add(1)
			}
			n := inside.Add(1)
			if alone && n != 1 || !alone && (writers.Load() > 0 || !k.shared && n > int32(k.limit)) {
				overlaps.Add(1)
			}
			time.Sleep(herdHold)
			inside.Add(-1)
			if alone {
				writers.Add(-1)
			}
			_ = l.Release(ctx)
		})
	}
	var waits [2][]time.Duration
	var cg sync.WaitGroup
	for j := range 2 {
		if !cold {
			break
		}
		cg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				l, err := cs[0].Acquire(ctx, fmt.Sprintf("cold%d:%d", j, i))
				if err != nil {
					b.Error(err)
					return
				}
				waits[j] = append(waits[j], time.Since(t0))
				_ = l.Release(ctx)
			}
		})
	}
	cg.Wait()
	time.Sleep(time.Until(deadline))
	cpu := redisCPU(ctx, srv.Client) - cpu0
	wg.Wait()
	if meter != nil {
		meter(false)
	}
	stats, err := redistest.CommandStats(ctx, srv.Client)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if n := overlaps.Load(); n > 0 {
		b.Fatalf("%s: %d holders beside a writer or the mutex's holder, or past the limit", k.name, n)
	}
	res := herdResult{served: int(served.Load()), redisCPU: cpu, redisTime: serverTime(stats, []string{"evalsha", "eval"})}
	if cold {
		all := sortDurations(append(waits[0], waits[1]...))
		res.coldP99 = float64(percentile(all, 0.99)) / float64(time.Millisecond)
	}
	return res
}

// BenchmarkRoundRobinInstructions counts, with callgrind on the server,
// the instructions redis-server runs per served acquire when processes
// take turns strictly first come, first served: 3 Clients with one caller
// each, every caller acquiring again as soon as it released, so each
// release grants the lock (or a permit) to the process waiting longest and
// no Client ever has a waiter of its own to hand the lock to. This is the
// cycle the shared kinds' promise (FIFO across processes) asks for under a
// herd: a release that grants, the grantee's attempt that takes the
// grant, and the releaser's next attempt that queues its process again.
// The mutex serves a herd cheaper than this by handing the lock to the
// next caller of the same process for a bounded run (BenchmarkHerd).
func BenchmarkRoundRobinInstructions(b *testing.B) {
	const cycles = 300
	for _, k := range herdKinds {
		if k.name == "readers-writers" {
			continue // readers share: no turns to take
		}
		b.Run(k.name, func(b *testing.B) {
			srv := underCallgrind(b)
			ctx := context.Background()
			cs := replicaClients(b, srv.Server, 3)
			// A semaphore's turns need its permits held: one holder keeps
			// one of the two, the callers take turns on the other.
			if k.limit > 1 {
				l, err := k.take(cs[0], ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Release(ctx)
			}
			var served atomic.Int64
			run := func(n int64) {
				served.Store(0)
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() {
						for served.Load() < n {
							l, err := k.take(cs[i], ctx, i)
							if err != nil {
								b.Error(err)
								return
							}
							served.Add(1)
							_ = l.Release(ctx)
						}
					})
				}
				wg.Wait()
			}
			run(50) // warm-up: scripts loaded, every process queued
			srv.zero()
			b.ResetTimer()
			run(cycles)
			b.StopTimer()
			b.ReportMetric(float64(srv.total())/float64(served.Load()), "redis-instr/served")
		})
	}
}

// replicaClients returns n lockkit Clients on srv, each on its own go-redis
// client (as replicas of a service would be), closed when b ends.
func replicaClients(b *testing.B, srv *redistest.Server, n int) []*core.Client {
	cs := make([]*core.Client, n)
	for i := range cs {
		rdb := goRedisClient(srv.Addr(), nil)
		c, err := core.New(rdb, core.WithTTL(ttl))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
		cs[i] = c
	}
	return cs
}

// counted is a redis-server under callgrind: zero starts its count, total
// dumps it and returns it (see BenchmarkRedisInstructions).
type counted struct {
	*redistest.Server
	b            *testing.B
	control, out string
}

// underCallgrind starts a redis-server under callgrind, or skips b where
// valgrind is not installed.
func underCallgrind(b *testing.B) *counted {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		b.Skip("valgrind not installed")
	}
	control, err := exec.LookPath("callgrind_control")
	if err != nil {
		b.Skip("callgrind_control not installed")
	}
	out := filepath.Join(b.TempDir(), "callgrind.out")
	srv := redistest.Start(b, redistest.WithWrapper(vg, "--tool=callgrind", "--callgrind-out-file="+out))
	return &counted{Server: srv, b: b, control: control, out: out}
}

func (c *counted) zero() { callgrind(c.b, c.control, "-z", c.Pid()) }
func (c *counted) total() int64 {
	callgrind(c.b, c.control, "-d", c.Pid())
	return dumpedInstructions(c.b, c.out)
}
