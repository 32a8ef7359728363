package faults_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 12: the primary freezes (SIGSTOP) while requests arrive with
// wait budgets (300ms) shorter than the go-redis I/O timeout (2s), so it is
// the budget that cuts their calls. Two request clients (processes) send
// waves of requests, two at a time per key so one queues behind the other:
// on keys nobody holds, and on a key a third client holds across the
// pause (its TTL outlives it).
//
// The checkers' verdicts:
//   - no request is reported not acquired unless a holder of its key
//     existed during its wait (faults.Contention): under the freeze the
//     requests on free keys end ErrUnavailable, not ErrNotAcquired — a hung
//     Redis is not contention;
//   - believed holds never overlap, fencing tokens rise, no lost update;
//   - after the resume every client acquires every key within the request
//     TTL (an acquire the frozen server applies once resumed, for a caller
//     that gave up, can strand a lock until then) plus a margin, and
//     nothing is left behind.
func TestS12FrozenPrimaryShortBudgets(t *testing.T) {
	const (
		budget    = 300 * time.Millisecond
		ioTimeout = 2 * time.Second
		ttl       = 2 * time.Second  // request clients
		holderTTL = 10 * time.Second // outlives the pause
		waves     = 3
	)
	held := "s12:held"
	keys := []string{held, "s12:free:0", "s12:free:1", "s12:free:2"}
	srv := redistest.Start(t)
	hist, res, cont := faults.NewHistory(), faults.NewResource(), faults.NewContention()
	ctx := testkit.Context(t, 90*time.Second)

	holder := newClient(t, srv.NewClient(), core.WithTTL(holderTTL), core.WithOwner("holder"))
	hFrom := time.Now()
	hl, err := holder.Acquire(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	holderReleased := cont.Held(held, "holder", hFrom)
	hh := hist.Begin("holder", hl)
	if err := res.Increment(held, hl.Token(), 0); err != nil {
		t.Fatal(err)
	}

	obs := newObserver()
	io := func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = ioTimeout, ioTimeout }
	var clients []*core.Client
	for i := range 2 {
		clients = append(clients, newClient(t, srv.NewClient(io), core.WithTTL(ttl), core.WithObserver(obs), core.WithOwner(fmt.Sprint("r", i))))
	}

	// request is one acquire as a request handler makes it: hold briefly
	// and write when acquired; the witnesses record everything.
	type result struct {
		who, key string
		took     time.Duration
		outcome  core.Outcome
		err      error
	}
	request := func(c *core.Client, who, key string, wait time.Duration) result {
		from := time.Now()
		l, err := c.Acquire(ctx, key, core.Wait(wait))
		r := result{who: who, key: key, took: time.Since(from), outcome: core.Classify(ctx, err), err: err}
		switch {
		case err == nil:
			released := cont.Held(key, who, from)
			hd := hist.Begin(who, l)
			if err := res.Increment(key, l.Token(), 0); err != nil {
				t.Errorf("%s write on %s: %v", who, key, err)
			}
			hd.Released()
			if err := l.Release(ctx); err != nil {
				t.Errorf("%s release of %s: %v", who, key, err)
			}
			released()
		case r.outcome.NotAcquired():
			cont.Refused(key, who, from, err)
		}
		return r
	}
	// wave sends perKey concurrent requests per client and key, and waits
	// for all of them.
	wave := func(name string, perKey int, wait time.Duration) []result {
		var mu sync.Mutex
		var out []result
		var wg sync.WaitGroup
		for ci, c := range clients {
			for _, k := range keys {
				for j := range perKey {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := request(c, fmt.Sprintf("%s r%d.%d", name, ci, j), k, wait)
						mu.Lock()
						out = append(out, r)
						mu.Unlock()
					}()
				}
			}
		}
		wg.Wait()
		return out
	}
	count := func(rs []result) map[core.Outcome]int {
		n := map[core.Outcome]int{}
		for _, r := range rs {
			n[r.outcome]++
		}
		return n
	}

	// Before the freeze: the held key refuses (founded refusals), the free
	// keys are taken and released.
	before := wave("before", 2, budget)
	if n := count(before); n[core.OutcomeTimeout] < 2 || n[core.OutcomeAcquired] < 2 {
		t.Fatalf("before the freeze: %v; want refusals on %s and acquisitions", n, held)
	}
	// Patient waiters, one per client, refused twice before the freeze (the
	// second time after their subscription was confirmed: they wait for a
	// notification on a lock seen held). Their budget ends during the
	// freeze, after the waves; the waves' requests on the held key queue
	// behind them.
	patient := make(chan result, len(clients))
	refusedBefore := obs.counts().contended
	for ci, c := range clients {
		go func() {
			patient <- request(c, fmt.Sprintf("patient r%d", ci), held, waves*budget+500*time.Millisecond)
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "the patient waiters refused twice", func() bool {
		return obs.counts().contended >= refusedBefore+2*len(clients)
	})

	var names []string // the requests after the resume, one per client and key
	for ci := range clients {
		for _, k := range keys {
			names = append(names, fmt.Sprintf("r%d %s", ci, k))
		}
	}
	live := faults.NewLiveness(names...)

	srv.Pause()
	pausedAt := time.Now()
	var frozen []result
	for i := range waves { // each wave starts when the previous one has ended
		frozen = append(frozen, wave(fmt.Sprint("frozen", i), 2, budget)...)
	}
	for range clients {
		frozen = append(frozen, testkit.Recv(t, patient, 10*time.Second, "a patient waiter"))
	}
	srv.Resume()
	pause := time.Since(pausedAt)
	live.Healed()

	n := count(frozen)
	for _, r := range frozen {
		switch {
		case r.outcome == core.OutcomeAcquired:
			t.Errorf("%s acquired %s while Redis was frozen", r.who, r.key)
		case r.outcome != core.OutcomeUnavailable && !r.outcome.NotAcquired():
			t.Errorf("%s on %s: %v (%v)", r.who, r.key, r.outcome, r.err)
		case r.took > budget+ioTimeout/2 && !strings.HasPrefix(r.who, "patient"):
			t.Errorf("%s on %s returned after %v with a %v budget", r.who, r.key, r.took, budget)
		}
	}
	if free := waves * len(clients) * 2 * (len(keys) - 1); n[core.OutcomeUnavailable] < free || n[core.OutcomeTimeout] < len(clients) {
		t.Errorf("frozen: %v; want at least %d unavailable (every request on a free key) and the patient waiters refused", n, free)
	}

	// Healed: the holder lets go, then every client takes every key.
	hh.Released()
	if err := hl.Release(ctx); err != nil {
		t.Errorf("holder release: %v", err)
	}
	holderReleased()
	var wg sync.WaitGroup
	for ci, c := range clients {
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("r%d %s", ci, k)
				r := request(c, "after "+who, k, 15*time.Second)
				if r.err != nil {
					live.Failed(who, r.err)
					return
				}
				live.Acquired(who)
			}()
		}
	}
	wg.Wait()

	for _, r := range cont.Unfounded() {
		t.Errorf("not acquired with no holder: %v", r)
	}
	if err := live.Check(ttl + 3*time.Second); err != nil {
		t.Error(err)
	}
	verdict(t, hist, res, false)
	noLeftovers(t, ttl+3*time.Second, srv.Client)
	t.Logf("frozen %v: %d requests during the freeze, %v; %d refusals in all, %d without a holder; the last acquired %v after the resume",
		pause.Round(time.Millisecond), len(frozen), n, len(cont.Refusals()), len(cont.Unfounded()), live.Latest().Round(time.Millisecond))
}
