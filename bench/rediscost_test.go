package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cycles of BenchmarkRedisInstructions: warm-up (scripts loaded,
// connections dialled, the lock's hash made) and counted.
const (
	costWarmup = 300
	costCycles = 1000
)

// BenchmarkRedisInstructions counts the instructions redis-server runs per
// uncontended cycle (S1: one caller, one key) of each library, with
// valgrind's callgrind on the server: metric redis-instr/cycle. The count is
// the same for the same commands whatever else the machine does, so unlike
// commandstats' microseconds it separates libraries a few per cent apart on
// a VM whose speed drifts; it includes what Redis does around a command
// (reading it, running a script's Lua, replying). Each library has its own
// server under callgrind: after the warm-up the count is zeroed
// (callgrind_control -z), costCycles cycles run, and the count is dumped
// (-d). It runs once whatever b.N is (make bench passes -benchtime 1x), and
// is skipped where valgrind is not installed (apt-get install -y valgrind).
func BenchmarkRedisInstructions(b *testing.B) {
	for _, sp := range specs {
		b.Run(sp.name, func(b *testing.B) {
			srv := underCallgrind(b)
			l, err := sp.mk(srv.Addr(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for range costWarmup {
				uncontendedCycle(b, sp.name, l, "bench:cost")
			}
			srv.zero()
			b.ResetTimer()
			for range costCycles {
				uncontendedCycle(b, sp.name, l, "bench:cost")
			}
			b.StopTimer()
			b.ReportMetric(float64(srv.total())/costCycles, "redis-instr/cycle")
		})
	}
}

// callgrind sends one command (-z zero, -d dump) to the callgrind process pid.
func callgrind(b *testing.B, control, cmd string, pid int) {
	b.Helper()
	if out, err := exec.Command(control, cmd, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %s %d: %v: %s", cmd, pid, err, out)
	}
}

// dumpedInstructions reads the total instruction count of the first dump
// callgrind wrote for out (out.1 or, with a pid in its name, out.<pid>.1),
// waiting for the file to be complete.
func dumpedInstructions(b *testing.B, out string) int64 {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(out + "*.1")
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "totals: "); ok {
					n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
					if err != nil {
						b.Fatalf("%s: %q: %v", f, line, err)
					}
					return n
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("no complete callgrind dump for %s", out)
	return 0
}
