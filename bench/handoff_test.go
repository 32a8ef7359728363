package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

// childEnv turns the test binary into the holder process of the
// cross-process hand-off benchmark.
const childEnv = "LOCKKIT_BENCH_HOLDER"

// BenchmarkCrossProcessHandoff: a holder in one OS process, a waiter in
// another; each round the holder releases and the waiter's Lock returns.
// Reported: release → waiter holds, p50/p99 (wall clock, same machine).
func BenchmarkCrossProcessHandoff(b *testing.B) {
	srv := redistest.Start(b)
	for _, name := range []string{"lockkit", "rueidislock", "redsync", "redsync-1ms", "redislock-linear"} {
		b.Run(name, func(b *testing.B) { runHandoff(b, srv, name) })
	}
}

func specByName(name string) lockerSpec {
	for _, s := range specs {
		if s.name == name {
			return s
		}
	}
	panic("no locker " + name)
}

func runHandoff(b *testing.B, srv *redistest.Server, name string) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name, "BENCH_REDIS="+srv.Addr())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	expect := func(prefix string) string {
		if !out.Scan() {
			b.Fatalf("holder: %v", out.Err())
		}
		line := out.Text()
		if !strings.HasPrefix(line, prefix) {
			b.Fatalf("holder said %q, want %q", line, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, prefix))
	}
	l, err := specByName(name).mk(srv.Addr(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	key := "bench:handoff:" + name
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		fmt.Fprintln(stdin, "acquire "+key)
		expect("held")
		got := make(chan time.Time, 1)
		go func() {
			unlock, err := l.Lock(ctx, key)
			if err != nil {
				b.Error(err)
				got <- time.Time{}
				return
			}
			got <- time.Now()
			_ = unlock(ctx)
		}()
		time.Sleep(20 * time.Millisecond) // let the waiter settle into waiting (a benchmark, not a test)
		fmt.Fprintln(stdin, "release")
		t0, _ := strconv.ParseInt(expect("released"), 10, 64)
		t1 := <-got
		lat = append(lat, t1.Sub(time.Unix(0, t0)))
	}
	b.StopTimer()
	sortDurations(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}

// holderMain is the holder process: "acquire <key>" → lock, "held";
// "release" → note the time, unlock, "released <unix ns>".
func holderMain(name string) int {
	l, err := specByName(name).mk(os.Getenv("BENCH_REDIS"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	var unlock func(context.Context) error
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch f[0] {
		case "acquire":
			if unlock, err = l.Lock(ctx, f[1]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println("held")
		case "release":
			t0 := time.Now().UnixNano()
			_ = unlock(ctx)
			fmt.Println("released", t0)
		}
	}
	if err := in.Err(); err != nil && err != io.EOF {
		return 1
	}
	return 0
}
