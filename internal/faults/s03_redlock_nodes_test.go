package faults_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

const (
	s03TTL         = 3 * time.Second
	s03NodeTimeout = 300 * time.Millisecond
)

func s03Client(t *testing.T, srvs []*redistest.Server, owner string, obs core.Observer) *core.Client {
	opts := []core.Option{core.WithTTL(s03TTL), core.WithNodeTimeout(s03NodeTimeout), core.WithOwner(owner)}
	if obs != nil {
		opts = append(opts, core.WithObserver(obs))
	}
	return newRedlock(t, clientsOf(srvs), opts...)
}

func allClients(srvs []*redistest.Server) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(srvs))
	for i, s := range srvs {
		out[i] = s.Client
	}
	return out
}

// Scenario 3a: with one of five Redlock nodes killed and another hung
// (SIGSTOP), two clients still exclude each other: every acquire and release
// completes within the node timeout's bound, believed holds never overlap,
// tokens increase and no update is lost. Once healed, nothing stays owned
// (the hung node applies the commands it buffered; an acquire it applies
// after its give-back expires by its TTL).
func TestS03RedlockMinorityDownOrHung(t *testing.T) {
	const key = "s03:minority"
	srvs := redistest.StartN(t, 5)
	clients := []*core.Client{s03Client(t, srvs, "a", nil), s03Client(t, srvs, "b", nil)}
	ctx := testkit.Context(t, 60*time.Second)

	srvs[0].Kill()
	srvs[1].Pause()
	hist, res := faults.NewHistory(), faults.NewResource()
	stopAt := time.Now().Add(3 * time.Second)
	var (
		wg      sync.WaitGroup
		cycles  atomic.Int64
		slowest atomic.Int64
	)
	for i, c := range clients {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("%c%d", 'a'+i, g)
				for n := 0; n < 50 && time.Now().Before(stopAt); n++ {
					start := time.Now()
					l, err := c.Acquire(ctx, key, core.Wait(20*time.Second))
					if err != nil {
						t.Errorf("%s: acquire with a minority down: %v", who, err)
						return
					}
					hd := hist.Begin(who, l)
					if err := res.Increment(key, l.Token(), time.Millisecond); err != nil {
						t.Errorf("%s: write: %v", who, err)
					}
					hd.Released()
					relStart := time.Now()
					if err := l.Release(ctx); err != nil {
						t.Errorf("%s: release with a minority down: %v", who, err)
						return
					}
					// Uncontended: the hung node costs one node timeout, not more.
					if d := time.Since(relStart); d > s03NodeTimeout+800*time.Millisecond {
						t.Errorf("%s: release took %v with a node timeout of %v", who, d, s03NodeTimeout)
					}
					if d := int64(time.Since(start)); d > slowest.Load() {
						slowest.Store(d)
					}
					cycles.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	if cycles.Load() < 4 {
		t.Fatalf("only %d cycles with a minority down", cycles.Load())
	}
	verdict(t, hist, res, false)
	if got := res.Value(key); got != cycles.Load() {
		t.Errorf("resource value %d after %d cycles", got, cycles.Load())
	}

	// Heal: the hung node resumes, the killed one comes back empty.
	srvs[1].Resume()
	srvs[0].Restart(false)
	live := faults.NewLiveness("after-heal")
	live.Healed()
	l, err := clients[0].Acquire(ctx, key, core.Wait(s03TTL+5*time.Second))
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	live.Acquired("after-heal")
	_ = l.Release(ctx)
	if err := live.Check(s03TTL + 3*time.Second); err != nil {
		t.Error(err)
	}
	noLeftovers(t, s03TTL+3*time.Second, allClients(srvs)...)
	t.Logf("%d cycles across 2 clients with 1 of 5 nodes down and 1 hung; slowest acquire+release %v; after heal acquired in %v",
		cycles.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), live.Latest().Round(time.Millisecond))
}

// Scenario 3b: a majority down (killed) or hung (SIGSTOP): acquiring,
// waiting and holding end cleanly and in bounded time — ErrUnavailable
// naming the failed nodes (not ErrNotAcquired), and a held lease lost at its
// deadline (ErrLost); after healing, locks work again.
func TestS03RedlockMajorityDownOrHung(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(s *redistest.Server)
		heal  func(s *redistest.Server)
	}{
		{"killed", (*redistest.Server).Kill, func(s *redistest.Server) { s.Restart(false) }},
		{"hung", (*redistest.Server).Pause, (*redistest.Server).Resume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "s03:majority:" + tc.name
			srvs := redistest.StartN(t, 5)
			wobs := newObserver()
			a := s03Client(t, srvs, "a", nil)
			b := s03Client(t, srvs, "b", wobs)
			ctx := testkit.Context(t, 60*time.Second)

			held, err := a.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			// A waiter queued behind the holder when the majority goes.
			waitErr := make(chan error, 1)
			go func() {
				l, err := b.Acquire(ctx, key, core.Wait(30*time.Second))
				if err == nil {
					_ = l.Release(ctx)
				}
				waitErr <- err
			}()
			testkit.WaitFor(t, 10*time.Second, "the waiter to be refused once", func() bool { return wobs.counts().contended >= 1 })
			for _, s := range srvs[:3] {
				tc.fault(s)
			}
			faultAt := time.Now()

			// The holder: lost at its deadline, not hung on the dead nodes.
			select {
			case <-held.Done():
			case <-time.After(s03TTL + 5*time.Second):
				t.Fatal("lease kept without a majority")
			}
			if !isLost(held) {
				t.Fatalf("holder cause %v", context.Cause(held.Context()))
			}
			if d := time.Since(faultAt); d > s03TTL+2*time.Second {
				t.Errorf("holder lost %v after the majority went", d)
			}
			// The waiter: a clean error, never a hang until its budget.
			werr := recv(t, waitErr, s03TTL+10*time.Second, "the waiter to give up")
			if !errors.Is(werr, core.ErrUnavailable) || errors.Is(werr, core.ErrNotAcquired) {
				t.Errorf("waiter = %v, want ErrUnavailable", werr)
			}
			// A fresh acquire: ErrUnavailable naming the three failed nodes, bounded.
			start := time.Now()
			_, err = a.Acquire(ctx, key+":fresh", core.Wait(10*time.Second))
			took := time.Since(start)
			var qe *core.QuorumError
			if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotAcquired) || !errors.As(err, &qe) || len(qe.Failed) != 3 {
				t.Fatalf("acquire with a majority %s = %v", tc.name, err)
			}
			if took > 3*time.Second {
				t.Fatalf("acquire with a majority %s took %v", tc.name, took)
			}
			// Release of the lost lease: immediate, no network.
			start = time.Now()
			if err := held.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
				t.Errorf("release after loss = %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("release of a lost lease took %v", d)
			}

			for _, s := range srvs[:3] {
				tc.heal(s)
			}
			live := faults.NewLiveness("b")
			live.Healed()
			l, err := b.Acquire(ctx, key, core.Wait(s03TTL+5*time.Second))
			if err != nil {
				t.Fatalf("after healing: %v", err)
			}
			live.Acquired("b")
			_ = l.Release(ctx)
			if err := live.Check(s03TTL + 3*time.Second); err != nil {
				t.Error(err)
			}
			noLeftovers(t, s03TTL+3*time.Second, allClients(srvs)...)
			t.Logf("majority %s: holder lost, waiter got %v; fresh acquire failed in %v; healed acquire in %v",
				tc.name, werr, took.Round(time.Millisecond), live.Latest().Round(time.Millisecond))
		})
	}
}
