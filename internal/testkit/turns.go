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
	took, _ := TurnsMetered(b, n, block, cycle)
	return took
}

// A Meter reads a counter that only grows, such as a process's CPU time.
type Meter func() time.Duration

// TurnsMetered is Turns that also charges each contender what each meter
// grew by during its blocks: used[m][i] for meter m and contender i. With
// one caller waiting on each reply, every microsecond either side spends
// (the client's work, Redis's) is on the critical path, and a profile
// spreads it over too many frames to add up by eye: CPU time per block
// says how much of a contender's time per cycle each side was at work.
func TurnsMetered(b *testing.B, n, block int, cycle func(i int), meters ...Meter) (took []time.Duration, used [][]time.Duration) {
	b.Helper()
	took = make([]time.Duration, n)
	used = make([][]time.Duration, len(meters))
	for m := range used {
		used[m] = make([]time.Duration, n)
	}
	at := make([]time.Duration, len(meters))
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	b.ResetTimer()
	for b.Loop() {
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			for m := len(meters) - 1; m >= 0; m-- { // meter 0's window innermost
				at[m] = meters[m]()
			}
			t0 := time.Now()
			for range block {
				cycle(i)
			}
			took[i] += time.Since(t0)
			for m, read := range meters {
				used[m][i] += read() - at[m]
			}
		}
	}
	b.StopTimer()
	return took, used
}
