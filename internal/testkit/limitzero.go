package testkit

import (
	"context"
	"net/http"
	"testing"

	"github.com/lockkit/lockkit/core"
)

// The routes (or RPC methods) LimitZeroIsTheMutex asks about, all locking
// one key: one built with Limit(0), one without Limit, one with Limit(1).
const (
	LimitZero = "Limit(0)"
	NoLimit   = "no Limit"
	LimitOne  = "Limit(1)"
)

// LimitZeroIsTheMutex checks what every adapter's Limit option says of 0
// and 1: Limit(0) is the key's mutex, the lock of a route without Limit,
// and Limit(1) a semaphore of one permit, another lock. It holds key's
// mutex, then a permit of key's semaphore of one, and each time has answer
// make one request of each route (LimitZero, NoLimit, LimitOne, all with
// NoWait) and say how it was answered: with the mutex held the first two
// are OutcomeContended and the third OutcomeAcquired; with the permit
// held, OutcomeAcquired twice and OutcomeLimited.
func LimitZeroIsTheMutex(t testing.TB, ctx context.Context, c *core.Client, key string, answer func(route string) core.Outcome) {
	t.Helper()
	for _, held := range []struct {
		name string
		take func() (*core.Lease, error)
		want map[string]core.Outcome
	}{
		{"the mutex", func() (*core.Lease, error) { return c.TryAcquire(ctx, key) },
			map[string]core.Outcome{LimitZero: core.OutcomeContended, NoLimit: core.OutcomeContended, LimitOne: core.OutcomeAcquired}},
		{"a permit", func() (*core.Lease, error) { return c.Semaphore(key, 1).TryAcquire(ctx) },
			map[string]core.Outcome{LimitZero: core.OutcomeAcquired, NoLimit: core.OutcomeAcquired, LimitOne: core.OutcomeLimited}},
	} {
		lease, err := held.take()
		if err != nil {
			t.Fatalf("taking %s of %q: %v", held.name, key, err)
		}
		for route, want := range held.want {
			if got := answer(route); got != want {
				t.Errorf("%s of %q held: the %s route answered %v, want %v", held.name, key, route, got, want)
			}
		}
		_ = lease.Release(ctx)
	}
}

// OutcomeOfStatus is the outcome an HTTP route's answer says, for the
// answer of LimitZeroIsTheMutex: 204 (its handler ran) OutcomeAcquired,
// 409 OutcomeContended, 429 OutcomeLimited, anything else 0.
func OutcomeOfStatus(status int) core.Outcome {
	switch status {
	case http.StatusNoContent:
		return core.OutcomeAcquired
	case http.StatusConflict:
		return core.OutcomeContended
	case http.StatusTooManyRequests:
		return core.OutcomeLimited
	}
	return 0
}
