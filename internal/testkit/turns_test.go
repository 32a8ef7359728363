package testkit

import (
	"testing"
	"time"
)

// Turns' order is drawn per round: over many rounds every contender runs
// right after each of the others, where a rotated fixed order gives each
// one the same predecessor in all but the round's first block.
func TestTurnsVaryPredecessors(t *testing.T) {
	const n = 5
	after := make([]map[int]bool, n) // after[i]: the contenders whose block came just before i's
	for i := range after {
		after[i] = map[int]bool{}
	}
	last, cycles := -1, 0
	testing.Benchmark(func(b *testing.B) {
		Turns(b, n, 1, func(i int) {
			cycles++
			if last >= 0 && last != i {
				after[i][last] = true
			}
			last = i
		})
	})
	if cycles < 50*n {
		t.Fatalf("only %d cycles ran", cycles)
	}
	for i, a := range after {
		if len(a) != n-1 {
			t.Errorf("contender %d ran after %d of the other %d only: %v", i, len(a), n-1, a)
		}
	}
}

// TurnsMetered with ProcessCPU charges each contender the CPU the process
// spent in its own blocks: one that computes is charged about its time
// (less on a busy machine, never nothing), one that sleeps as long next to
// nothing (a timer's wake-up).
func TestTurnsCPUChargesTheBlockThatWorks(t *testing.T) {
	const d = 2 * time.Millisecond
	var took []time.Duration
	var used [][]time.Duration
	sink := 0
	testing.Benchmark(func(b *testing.B) {
		took, used = TurnsMetered(b, 2, 1, func(i int) {
			if i == 1 {
				time.Sleep(d)
				return
			}
			for start := time.Now(); time.Since(start) < d; {
				sink++
			}
		}, ProcessCPU)
	})
	cpu := used[0]
	if cpu[0] == 0 && cpu[1] == 0 {
		t.Skip("no per-process CPU time on this OS")
	}
	if cpu[0] < took[0]/10 || cpu[1] > cpu[0]/4 {
		t.Fatalf("computing: %v CPU in %v; sleeping: %v CPU in %v", cpu[0], took[0], cpu[1], took[1])
	}
}
