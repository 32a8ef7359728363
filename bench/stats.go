package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// percentile of sorted durations (q in [0,1]).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

func sortDurations(d []time.Duration) []time.Duration {
	slices.Sort(d)
	return d
}

// mainThreadCPU reads the CPU time of process pid's main thread, the one
// where redis-server runs every command, from /proc/<pid>/schedstat (in
// nanoseconds, and without a round trip that would land in what it
// measures); zero where there is no such file.
func mainThreadCPU(pid int) testkit.Meter {
	path := fmt.Sprintf("/proc/%d/schedstat", pid)
	return func() time.Duration {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		return time.Duration(ns)
	}
}

// redisCPU is the server's used CPU (user + sys), from INFO cpu.
func redisCPU(ctx context.Context, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, f := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, _ := strconv.ParseFloat(v, 64)
				total += x
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

// serverTime is Redis's own time for the commands a library sent, by INFO
// commandstats: the server-side cost of its cycles without the system calls
// that read and write them, which every library pays per round trip alike.
// Only the commands it sent count: a script's line already includes the
// commands it calls, which Redis 7.0 also counts on their own lines.
func serverTime(stats map[string]redistest.CommandStat, sent []string) time.Duration {
	var usec float64
	for _, name := range sent {
		usec += stats[name].Usec
	}
	return time.Duration(usec * float64(time.Microsecond))
}

// appendCommandStats appends a run's INFO commandstats to the file named by
// BENCH_COMMANDSTATS, under a heading naming the run: where Redis's time went,
// command by command (a script's line includes the calls it made, which also
// have lines of their own).
func appendCommandStats(b *testing.B, file, run string, cycles int, rdb *redis.Client) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "## %s: %d cycles\n%s\n", run, cycles, strings.TrimSpace(info)); err != nil {
		b.Fatal(err)
	}
}
