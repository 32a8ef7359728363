package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// own blocks, <library>-vs-bare that rate over bare-setnx's. One redis-server, as
// for the scenarios; each library on a key of its own.
func BenchmarkS1Turns(b *testing.B) {
	srv := redistest.Start(b)
	type turn struct {
		name string
		l    Locker
		key  string
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
		ts = append(ts, &turn{name: sp.name, l: l, key: fmt.Sprintf("bench:S1turns:%s", sp.name)})
	}
	if bare < 0 {
		b.Fatal("no bare-setnx locker")
	}
	for range 200 { // scripts loaded, connections dialled
		for _, t := range ts {
			uncontendedCycle(b, t.name, t.l, t.key)
		}
	}
	const block = 50
	took := testkit.Turns(b, len(ts), block, func(i int) { uncontendedCycle(b, ts[i].name, ts[i].l, ts[i].key) })
	n := float64(b.N * block)
	for i, t := range ts {
		b.ReportMetric(n/took[i].Seconds(), t.name+"-cycles/s")
		b.ReportMetric(took[bare].Seconds()/took[i].Seconds(), t.name+"-vs-bare")
	}
}

// uncontendedCycle takes and gives back the lock on key with l, failing b
// on an error: one S1 cycle, with a deadline on it as the scenarios have.
func uncontendedCycle(b *testing.B, name string, l Locker, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unlock, err := l.Lock(ctx, key)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	if err := unlock(ctx); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
}
