package testkit

import "testing"

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
