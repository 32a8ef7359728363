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
	"github.com/lockkit/lockkit/internal/testkit"
)

// scenario is one load shape (S1–S6): workers on keys with a critical
// section of cs, spread over replicas (each replica has its own Locker, so its
// own client and connection pool, as separate processes of a service would).
type scenario struct {
	name     string
	workers  int // in all, spread evenly over the replicas
	keys     int
	cs       time.Duration
	replicas int
}

var scenarios = []scenario{
	{"S1-1worker-1key", 1, 1, 0, 1},
	{"S2-64workers-64keys", 64, 64, 0, 1},
	{"S3-16workers-1key", 16, 1, 0, 1},
	{"S4-16workers-1key-1ms", 16, 1, time.Millisecond, 1},
	{"S5-64workers-4keys-1ms", 64, 4, time.Millisecond, 1},
	{"S6-4replicas-4workers-1key-1ms", 16, 1, time.Millisecond, 4},
}

// BenchmarkScenarios runs every scenario for every library against one
// redis-server. Metrics per cycle (one acquire + critical section + release):
// cycles/s, acquire wait p50/p99/max, Redis server CPU (redis-cpu-us/cycle:
// the process's user + system time, system calls included), the
// benchmark process's CPU, the library's work and the harness's alike
// (client-cpu-us/cycle: on 2 cores, what the two together use per cycle
// bounds the rate once both are busy), Redis's own
// time for the commands the library sent (redis-us/cycle: INFO
// commandstats, see serverTime), round trips (go-redis libraries) and
// allocations; BENCH_COMMANDSTATS=file appends each run's commandstats to
// file; every cycle is checked by an
// overlap witness and the benchmark fails on an overlap. With several
// replicas (S6) also: min-share, the least-served replica's cycles over the
// mean per replica (1 = even). Under contention also gap-p50-ms and
// gap-p99-ms: from a holder beginning to release a key to the next holder
// holding it (a release nobody took next is not a gap). With a critical
// section (S4–S6) also:
// ceiling-cycles/s, keys / (sleep + ping), the
// most a lock handed on in one round trip could give, with its two inputs
// measured before the timed part, each the median of 101: sleep-ms, what
// time.Sleep(cs) really takes, and ping-ms, one PING round trip; and hold-ms,
// the mean critical section during the run (longer than sleep-ms when the
// library's own load delays the holder's wake-up).
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
	lockers := make([]Locker, sc.replicas)
	for r := range lockers {
		l, err := sp.mk(srv.Addr(), rtt)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		lockers[r] = l
	}
	keys := make([]string, sc.keys)
	inside := make([]atomic.Int32, sc.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:%s:%d", sc.name, i)
	}
	// warm up: scripts loaded, connections dialled
	for _, l := range lockers {
		for i := range min(sc.keys, 8) {
			unlock, err := l.Lock(ctx, keys[i])
			if err != nil {
				b.Fatal(err)
			}
			_ = unlock(ctx)
		}
	}
	var sleep, ping time.Duration
	if sc.cs > 0 {
		sleep, ping = calibrate(b, srv, sc.cs)
	}
	var (
		next     atomic.Int64
		overlaps atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		waits    = make([]time.Duration, 0, b.N)
		served   = make([]atomic.Int64, sc.replicas) // cycles per replica
		held     atomic.Int64                        // critical sections, ns in all
		// released: per key, when its last holder began to release it (unix
		// ns, 0 once the next holder took it); gaps: release begun → next
		// holder holding, the hand-off as the application sees it.
		released = make([]atomic.Int64, sc.keys)
		gaps     = make([]time.Duration, 0, b.N)
	)
	rtt.n.Store(0)
	if err := srv.Client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := redisCPU(ctx, srv.Client)
	client0 := testkit.ProcessCPU()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range sc.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := w % sc.keys
			r := w % sc.replicas
			l := lockers[r]
			local := make([]time.Duration, 0, b.N/sc.workers+1)
			var localGaps []time.Duration
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
				if r := released[k].Swap(0); r != 0 {
					localGaps = append(localGaps, time.Since(time.Unix(0, r)))
				}
				if sc.cs > 0 {
					t1 := time.Now()
					time.Sleep(sc.cs)
					held.Add(int64(time.Since(t1)))
				}
				inside[k].Add(-1)
				released[k].Store(time.Now().UnixNano())
				_ = unlock(cctx)
				cancel()
				served[r].Add(1)
				local = append(local, waited)
			}
			mu.Lock()
			waits = append(waits, local...)
			gaps = append(gaps, localGaps...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	client := testkit.ProcessCPU() - client0
	cpu := redisCPU(ctx, srv.Client) - cpu0
	stats, err := redistest.CommandStats(ctx, srv.Client)
	if err != nil {
		b.Fatal(err)
	}
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
	b.ReportMetric(float64(client.Microseconds())/cycles, "client-cpu-us/cycle")
	if f := os.Getenv("BENCH_COMMANDSTATS"); f != "" {
		appendCommandStats(b, f, sc.name+"/"+sp.name, len(waits), srv.Client)
	}
	b.ReportMetric(float64(serverTime(stats, rtt.names(sp)))/float64(time.Microsecond)/cycles, "redis-us/cycle")
	if sc.workers > sc.keys && len(gaps) > 0 {
		sortDurations(gaps)
		b.ReportMetric(ms(percentile(gaps, 0.5)), "gap-p50-ms")
		b.ReportMetric(ms(percentile(gaps, 0.99)), "gap-p99-ms")
	}
	if sc.replicas > 1 {
		least := served[0].Load()
		for r := range served {
			least = min(least, served[r].Load())
		}
		b.ReportMetric(float64(least)/(cycles/float64(sc.replicas)), "min-share")
	}
	if sc.cs > 0 {
		b.ReportMetric(float64(sc.keys)/(sleep+ping).Seconds(), "ceiling-cycles/s")
		b.ReportMetric(ms(sleep), "sleep-ms")
		b.ReportMetric(ms(ping), "ping-ms")
		b.ReportMetric(ms(time.Duration(held.Load()/int64(len(waits)))), "hold-ms")
	}
	if sp.goRedis {
		b.ReportMetric(float64(rtt.n.Load())/cycles, "rtt/cycle")
	}
	if f := failures.Load(); f > 0 {
		b.ReportMetric(float64(f), "failed")
	}
}

// calibrate measures, on this machine now, what time.Sleep(cs) really takes
// and one round trip to srv (PING): the median of 101 of each.
func calibrate(b *testing.B, srv *redistest.Server, cs time.Duration) (sleep, ping time.Duration) {
	s := make([]time.Duration, 101)
	p := make([]time.Duration, len(s))
	for i := range s {
		t0 := time.Now()
		time.Sleep(cs)
		s[i] = time.Since(t0)
		t0 = time.Now()
		if err := srv.Client.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
		p[i] = time.Since(t0)
	}
	return percentile(sortDurations(s), 0.5), percentile(sortDurations(p), 0.5)
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(holderMain(name))
	}
	os.Exit(m.Run())
}
