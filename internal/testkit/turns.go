package testkit

import (
	"testing"
	"time"
)

// Turns runs the cycles of n contenders (libraries, or variants of one)
// taking turns, for a benchmark: each of b.N rounds runs block cycles of
// every contender, one contender after another, and each round starts one
// contender further on, so none always runs first or after the same one.
// This VM's speed drifts within a run by more than the contenders differ;
// taking turns weighs the drift on each alike, where running them one
// after the other does not. It returns each contender's time over its own
// blocks, for b.N*block cycles each; b's timer covers the rounds only.
func Turns(b *testing.B, n, block int, cycle func(i int)) []time.Duration {
	b.Helper()
	took := make([]time.Duration, n)
	round := 0
	b.ResetTimer()
	for b.Loop() {
		round++
		for j := range n {
			i := (round + j) % n
			t0 := time.Now()
			for range block {
				cycle(i)
			}
			took[i] += time.Since(t0)
		}
	}
	b.StopTimer()
	return took
}
