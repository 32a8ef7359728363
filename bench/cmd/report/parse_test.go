package main

import (
	"strings"
	"testing"
)

// A line go-redis's pool logged into while the benchmark ran: the name is
// cut from its figures, which follow on a line of their own. The row is
// kept; a turn-taking benchmark's per-contender metrics become rows.
func TestParse(t *testing.T) {
	raw := "goos: linux\n" +
		"BenchmarkCrossProcessHandoff/redsync-2         \t      15\t 134265988 ns/op\t        92.91 p50-ms\n" +
		"BenchmarkCrossProcessHandoff/redsync-1ms-2     \tredis: 2026/11/26 19:22:49 pool.go:1458: Unexpected conn[10] state changed by hook to CLOSED, closing it\n" +
		"      97\t  22343540 ns/op\t         1.500 p50-ms\t         3.314 p99-ms\n" +
		"BenchmarkS1Turns-2 \t 200\t 1 ns/op\t 8323 bare-setnx-cycles/s\t 1.000 bare-setnx-vs-bare\t 6500 lockkit-cycles/s\t 0.781 lockkit-vs-bare\n"
	rows, header := parse(strings.NewReader(raw))
	if len(header) != 1 {
		t.Errorf("header %q", header)
	}
	got := map[string]map[string]float64{}
	for _, r := range rows {
		got[r.group+"/"+r.sub] = r.metrics
	}
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
