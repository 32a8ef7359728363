package main

import (
	"strings"
	"testing"
)

// A line go-redis's pool logged into while the benchmark ran: the name is
// cut from its figures, which follow on a line of their own, after any
// further lines it logged meanwhile. The row is kept; a turn-taking
// benchmark's per-contender metrics become rows.
func TestParse(t *testing.T) {
	raw := "goos: linux\n" +
		"BenchmarkCrossProcessHandoff/redsync-2         \tredis: 2026/11/27 10:20:15 pool.go:1458: Unexpected conn[9] state changed by hook to CLOSED, closing it\n" +
		"redis: 2026/11/27 10:20:18 pool.go:1458: Unexpected conn[10] state changed by hook to CLOSED, closing it\n" +
		"      15\t 134265988 ns/op\t        92.91 p50-ms\n" +
		"BenchmarkCrossProcessHandoff/redsync-1ms-2     \tredis: 2026/11/26 19:22:49 pool.go:1458: Unexpected conn[10] state changed by hook to CLOSED, closing it\n" +
		"      97\t  22343540 ns/op\t         1.500 p50-ms\t         3.314 p99-ms\n" +
		"BenchmarkS1Turns-2 \t 200\t 1 ns/op\t 8323 bare-setnx-cycles/s\t 1.000 bare-setnx-vs-bare\t 6500 lockkit-cycles/s\t 0.781 lockkit-vs-bare\n"
	rows, header := parse(strings.NewReader(raw))
	if len(header) != 1 {
		t.Errorf("header %q", header)
	}
	got := metricsBy(rows, func(r row) string { return r.group + "/" + r.sub })
	if m := got["CrossProcessHandoff/redsync-1ms"]; m == nil || m["p99-ms"] != 3.314 || m["p50-ms"] != 1.5 {
		t.Errorf("the cut line's row: %v (all: %v)", m, got)
	}
	if m := got["CrossProcessHandoff/redsync"]; m == nil || m["p50-ms"] != 92.91 {
		t.Errorf("redsync: %v", m)
	}
	if m := got["S1Turns/lockkit"]; m == nil || m["cycles/s"] != 6500 || m["vs-bare"] != 0.781 {
		t.Errorf("S1Turns/lockkit: %v", m)
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want 4: %v", len(rows), got)
	}
}

// Redis's instruction counts are compared with the lowest peer and the floor.
func TestRatioLineInstructions(t *testing.T) {
	raw := "BenchmarkRedisInstructions/lockkit-2 \t 1\t 1 ns/op\t 100000 redis-instr/cycle\n" +
		"BenchmarkRedisInstructions/redsync-2 \t 1\t 1 ns/op\t 34000 redis-instr/cycle\n" +
		"BenchmarkRedisInstructions/redislock-exp-2 \t 1\t 1 ns/op\t 55000 redis-instr/cycle\n" +
		"BenchmarkRedisInstructions/bare-setnx-2 \t 1\t 1 ns/op\t 16000 redis-instr/cycle\n"
	rows, _ := parse(strings.NewReader(raw))
	got := ratioLine(rows)
	for _, want := range []string{"lockkit **2.94×** the lowest peer's (redsync, 34000)", "6.25× bare SET NX + DEL's (16000)"} {
		if !strings.Contains(got, want) {
			t.Errorf("ratio line %q lacks %q", got, want)
		}
	}
}

// S1Turns' floors (commands sent without a lock library) are not peers: the
// best peer is the fastest library, however fast a floor ran; and the CPU
// units split by library, not into "-cpu-us" of a library "x-redis".
func TestRatioLineFloorsAreNotPeers(t *testing.T) {
	raw := "BenchmarkS1Turns-2 \t 400\t 1 ns/op\t 8000 bare-setnx-cycles/s\t 1.000 bare-setnx-vs-bare\t" +
		" 7600 floor-empty-scripts-cycles/s\t 0.950 floor-empty-scripts-vs-bare\t" +
		" 7000 lockkit-cycles/s\t 0.875 lockkit-vs-bare\t 86.5 lockkit-client-cpu-us\t 57.9 lockkit-redis-cpu-us\t" +
		" 7200 redislock-exp-cycles/s\t 0.900 redislock-exp-vs-bare\n"
	rows, _ := parse(strings.NewReader(raw))
	got := metricsBy(rows, func(r row) string { return r.sub })
	if m := got["lockkit"]; m["client-cpu-us"] != 86.5 || m["redis-cpu-us"] != 57.9 {
		t.Errorf("lockkit: %v (all: %v)", m, got)
	}
	line := ratioLine(rows)
	if !strings.Contains(line, "best peer (redislock-exp)") {
		t.Errorf("ratio line %q: the best peer is redislock-exp", line)
	}
}

// Next to the ceiling from the sleep measured before the run, the ratio
// line gives the one with the hold lockkit's holders had in the run.
func TestRatioLineHeldCeiling(t *testing.T) {
	raw := "BenchmarkScenarios/S5-64workers-4keys-1ms/lockkit-2 \t 1\t 1 ns/op\t 3163 cycles/s\t 3565 ceiling-cycles/s\t 1.084 sleep-ms\t 0.038 ping-ms\t 1.231 hold-ms\n"
	rows, _ := parse(strings.NewReader(raw))
	line := ratioLine(rows)
	for _, want := range []string{"lockkit at 89% of the ceiling", "(100% of 3152, the ceiling with the 1.23 ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("ratio line %q lacks %q", line, want)
		}
	}
}

// metricsBy maps each row's metrics by name(row).
func metricsBy(rows []row, name func(row) string) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, r := range rows {
		m[name(r)] = r.metrics
	}
	return m
}
