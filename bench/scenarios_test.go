package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

// scenario is one load shape (S1–S5 in the README): workers on keys with a critical
// section of cs.
type scenario struct {
	name    string
	workers int
	keys    int
	cs      time.Duration
}

var scenarios = []scenario{
	{"S1-1worker-1key", 1, 1, 0},
	{"S2-64workers-64keys", 64, 64, 0},
	{"S3-16workers-1key", 16, 1, 0},
	{"S4-16workers-1key-1ms", 16, 1, time.Millisecond},
	{"S5-64workers-4keys-1ms", 64, 4, time.Millisecond},
}

// BenchmarkScenarios runs every scenario for every library against one
// redis-server. Metrics per cycle (one acquire + critical section + release):
// cycles/s, acquire wait p50/p99/max, Redis server CPU, round trips
// (go-redis libraries) and allocations; every cycle is checked by an
// overlap witness and the benchmark fails on an overlap.
func BenchmarkScenarios(b *testing.B) {
	srv := redistest.Start(b)
	for _, sc := range scenarios {
		for _, sp := range specs {
			if sp.uncontendedOnly && sc.workers > sc.keys {
				continue
			}
			b.Run(sc.name+"/"+sp.name, func(b *testing.B) { runScenario(b, srv, sc, sp) })
		}
	}
}

func runScenario(b *testing.B, srv *redistest.Server, sc scenario, sp lockerSpec) {
	ctx := context.Background()
	if err := srv.Client.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	rtt := &rttCounter{}
	l, err := sp.mk(srv.Addr(), rtt)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	keys := make([]string, sc.keys)
	inside := make([]atomic.Int32, sc.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:%s:%d", sc.name, i)
	}
	// warm up: scripts loaded, connections dialled
	for i := range min(sc.keys, 8) {
		unlock, err := l.Lock(ctx, keys[i])
		if err != nil {
			b.Fatal(err)
		}
		_ = unlock(ctx)
	}
	var (
		next     atomic.Int64
		overlaps atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		waits    = make([]time.Duration, 0, b.N)
	)
	rtt.n.Store(0)
	cpu0 := redisCPU(ctx, srv.Client)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range sc.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := w % sc.keys
			local := make([]time.Duration, 0, b.N/sc.workers+1)
			for next.Add(1) <= int64(b.N) {
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				t0 := time.Now()
				unlock, err := l.Lock(cctx, keys[k])
				waited := time.Since(t0)
				if err != nil {
					cancel()
					failures.Add(1)
					continue
				}
				if inside[k].Add(1) != 1 {
					overlaps.Add(1)
				}
				if sc.cs > 0 {
					time.Sleep(sc.cs)
				}
				inside[k].Add(-1)
				_ = unlock(cctx)
				cancel()
				local = append(local, waited)
			}
			mu.Lock()
			waits = append(waits, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := redisCPU(ctx, srv.Client) - cpu0
	if n := overlaps.Load(); n > 0 {
		b.Fatalf("%s/%s: %d overlapping holders", sc.name, sp.name, n)
	}
	cycles := float64(len(waits))
	if cycles == 0 {
		b.Fatalf("no successful cycle (%d failures)", failures.Load())
	}
	sortDurations(waits)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(cycles/elapsed.Seconds(), "cycles/s")
	b.ReportMetric(ms(percentile(waits, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(waits, 0.99)), "p99-ms")
	b.ReportMetric(ms(waits[len(waits)-1]), "max-ms")
	b.ReportMetric(float64(cpu.Microseconds())/cycles, "redis-cpu-us/cycle")
	if sp.goRedis {
		b.ReportMetric(float64(rtt.n.Load())/cycles, "rtt/cycle")
	}
	if f := failures.Load(); f > 0 {
		b.ReportMetric(float64(f), "failed")
	}
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(holderMain(name))
	}
	os.Exit(m.Run())
}
