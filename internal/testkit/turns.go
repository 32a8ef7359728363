package testkit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Turns runs the cycles of n contenders (libraries, or variants of one)
// taking turns, for a benchmark: each of b.N rounds runs block cycles of
// every contender, one contender after another, in an order drawn afresh
// each round, so none always runs first or after the same one (what runs
// just before a block — its garbage, its connections' wake-ups — weighs on
// that block). This VM's speed drifts within a run by more than the
// contenders differ; taking turns weighs the drift on each alike, where
// running them one after the other does not. The order is drawn from a
// fixed seed, so one run's rounds are repeated by the next. It returns
// each contender's time over its own blocks, for b.N*block cycles each;
// b's timer covers the rounds only.
func Turns(b *testing.B, n, block int, cycle func(i int)) []time.Duration {
	b.Helper()
	took := make([]time.Duration, n)
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	b.ResetTimer()
	for b.Loop() {
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
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
