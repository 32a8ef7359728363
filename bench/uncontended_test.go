package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// BenchmarkS1Turns is S1 (one worker, one key, nothing in the critical
// section) with every library taking turns (testkit.Turns: blocks of 50
// cycles). S1's own cells run one library after the other, and this VM's
// speed drifts within a run by more than the libraries differ: two of them
// whose uncontended paths are the same code (redislock-linear and
// redislock-exp) have come out 25 % apart. Taking turns weighs the drift on
// every library alike. <library>-cycles/s is each one's rate over its
// own blocks, <library>-vs-bare that rate over bare-setnx's, and the CPU
// time per cycle spent during its blocks by the benchmark's process
// (<library>-client-cpu-us) and by redis-server's main thread, where it
// runs every command (<library>-redis-cpu-us): with one caller, both are on
// the critical path of every cycle.
// One redis-server, as for the scenarios; each library on a key of its own.
//
// Two floors take turns with them, to say where lockkit's time goes:
// floor-lockkit-calls sends the very commands of one lockkit cycle
// (recorded from a Client: the two scripts, their arguments) with
// go-redis and no lockkit code, so lockkit's distance to it is lockkit's
// client work; floor-empty-scripts sends the same commands to a script
// that only returns, so its distance to bare is what two script calls
// cost whatever they do, and floor-lockkit-calls' distance to it is the
// work inside lockkit's scripts.
func BenchmarkS1Turns(b *testing.B) {
	srv := redistest.Start(b)
	type turn struct {
		name  string
		cycle func(ctx context.Context) error
	}
	var ts []*turn
	bare := -1
	for _, sp := range specs {
		l, err := sp.mk(srv.Addr(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		if sp.name == "bare-setnx" {
			bare = len(ts)
		}
		key := fmt.Sprintf("bench:S1turns:%s", sp.name)
		ts = append(ts, &turn{name: sp.name, cycle: func(ctx context.Context) error { return lockCycle(ctx, l, key) }})
	}
	if bare < 0 {
		b.Fatal("no bare-setnx locker")
	}
	calls, emptied := lockkitCalls(b, srv.Addr(), "bench:S1turns:floor")
	rdb := goRedisClient(srv.Addr(), nil)
	defer rdb.Close()
	replay := func(cmds [][]any) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			for _, args := range cmds {
				if err := rdb.Do(ctx, args...).Err(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	ts = append(ts, &turn{name: "floor-lockkit-calls", cycle: replay(calls)}, &turn{name: "floor-empty-scripts", cycle: replay(emptied)})
	cycle := func(i int) { timedCycle(b, ts[i].name, ts[i].cycle) }
	for range 200 { // scripts loaded, connections dialled
		for i := range ts {
			cycle(i)
		}
	}
	const block = 50
	took, used := testkit.TurnsMetered(b, len(ts), block, cycle, testkit.ProcessCPU, mainThreadCPU(srv.Pid()))
	n := float64(b.N * block)
	for i, t := range ts {
		b.ReportMetric(n/took[i].Seconds(), t.name+"-cycles/s")
		b.ReportMetric(took[bare].Seconds()/took[i].Seconds(), t.name+"-vs-bare")
		for m, unit := range []string{"-client-cpu-us", "-redis-cpu-us"} {
			if used[m][i] > 0 {
				b.ReportMetric(float64(used[m][i].Nanoseconds())/1e3/n, t.name+unit)
			}
		}
	}
}

// lockkitCalls records the commands of one uncontended lockkit cycle on
// key (its acquire and release scripts, as EVALSHA with their arguments),
// and the same commands with a script that only returns in their place.
func lockkitCalls(b *testing.B, addr, key string) (calls, emptied [][]any) {
	var sent [][]any
	rdb := goRedisClient(addr, nil)
	defer rdb.Close()
	rdb.AddHook(testkit.EachCommand(func(cmd redis.Cmder) { sent = append(sent, slices.Clone(cmd.Args())) }))
	c, err := core.New(rdb, core.WithTTL(ttl))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for range 2 { // the first cycle loads the scripts (EVAL); the second is the common one
		sent = nil
		if err := lockCycle(context.Background(), &lockkitLocker{c: c}, key); err != nil {
			b.Fatal(err)
		}
	}
	cycle := sent
	empty, err := rdb.ScriptLoad(context.Background(), "return 1").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, args := range cycle {
		if len(args) < 2 || !strings.EqualFold(fmt.Sprint(args[0]), "evalsha") {
			b.Fatalf("lockkit's uncontended cycle sent %v, not EVALSHA", args)
		}
		e := slices.Clone(args)
		e[1] = empty
		calls, emptied = append(calls, args), append(emptied, e)
	}
	if len(calls) != 2 {
		b.Fatalf("lockkit's uncontended cycle sent %d commands, not 2", len(calls))
	}
	return calls, emptied
}

// lockCycle takes and gives back the lock on key with l.
func lockCycle(ctx context.Context, l Locker, key string) error {
	unlock, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	return unlock(ctx)
}

// uncontendedCycle takes and gives back the lock on key with l, failing b
// on an error: one S1 cycle.
func uncontendedCycle(b *testing.B, name string, l Locker, key string) {
	timedCycle(b, name, func(ctx context.Context) error { return lockCycle(ctx, l, key) })
}

// timedCycle runs cycle with a deadline on it, as the scenarios have,
// failing b on an error.
func timedCycle(b *testing.B, name string, cycle func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cycle(ctx); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
}
