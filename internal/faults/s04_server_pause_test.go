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
)

// Scenario 4: the Redis server is frozen (SIGSTOP) for 2.5s while one
// client holds two locks (TTL 1s) and works on them, and two other clients
// wait for both. During the pause the holder's leases end at their local
// deadlines (ErrLost), without waiting for the hung renewal; after SIGCONT
// every waiter acquires within TTL + a margin; believed holds never overlap
// and the fenced resource loses no update.
//
// A waiter's attempt can be in flight across the whole pause. Its reply then
// comes late, and the engine treats a reply later than the waiter's own
// lease validity (its TTL − drift), or a call longer than the go-redis read
// timeout, as ErrUnavailable: it gives back what it may have been granted
// and ends the wait (it does not retry within the wait budget).
//   - waiters with TTL 5s and a 5s read timeout outlast the 2.5s pause: all
//     of them acquire after the resume;
//   - waiters with TTL 1s each either acquire or get ErrUnavailable (never a
//     hang, never an overlap); one retry after the heal then acquires.
func TestS04ServerPausedWhileHeld(t *testing.T) {
	t.Run("waiter TTL 5s", func(t *testing.T) { s04(t, 5*time.Second, false) })
	t.Run("waiter TTL 1s", func(t *testing.T) { s04(t, time.Second, true) })
}

func s04(t *testing.T, waiterTTL time.Duration, mayFail bool) {
	const ttl = time.Second
	const pause = 2500 * time.Millisecond
	keys := []string{"s04:a", "s04:b"}
	srv := redistest.Start(t)
	hist, res := faults.NewHistory(), faults.NewResource()
	ctx := testkit.Context(t, 60*time.Second)

	holder := newClient(t, srv.NewClient(), core.WithTTL(ttl), core.WithOwner("holder"))
	var leases []*core.Lease
	var work sync.WaitGroup
	for _, k := range keys {
		l, err := holder.Acquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		hd := hist.Begin("holder", l)
		work.Add(1)
		go func() { // works until its lease ends
			defer work.Done()
			defer hd.Close()
			for range 1000 {
				if l.Context().Err() != nil {
					return
				}
				if err := res.Increment(k, l.Token(), 2*time.Millisecond); err != nil {
					t.Errorf("holder write: %v", err)
					return
				}
				select {
				case <-l.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}

	wobs := newObserver()
	var waiters []string
	for i := range 2 {
		waiters = append(waiters, fmt.Sprint("w", i, keys[0]), fmt.Sprint("w", i, keys[1]))
	}
	live := faults.NewLiveness(waiters...)
	var wg sync.WaitGroup
	var failed atomic.Int64
	healed := make(chan struct{})
	for i := range 2 {
		c := newClient(t, srv.NewClient(readTimeout(5*time.Second)), core.WithTTL(waiterTTL), core.WithObserver(wobs),
			core.WithOwner(fmt.Sprint("w", i)))
		for _, k := range keys {
			who := fmt.Sprint("w", i, k)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := c.Acquire(ctx, k, core.Wait(20*time.Second))
				if err != nil && mayFail && errors.Is(err, core.ErrUnavailable) {
					failed.Add(1)
					<-healed // the application retries once Redis is back
					l, err = c.Acquire(ctx, k, core.Wait(20*time.Second))
				}
				if err != nil {
					live.Failed(who, err)
					return
				}
				live.Acquired(who)
				hd := hist.Begin(who, l)
				if err := res.Increment(k, l.Token(), 2*time.Millisecond); err != nil {
					t.Errorf("%s write: %v", who, err)
				}
				hd.Released()
				if err := l.Release(ctx); err != nil {
					t.Errorf("%s release: %v", who, err)
				}
			}()
		}
	}
	// Every waiter has been refused once (and so subscribed) before the pause.
	testkit.WaitFor(t, 10*time.Second, "4 waiters refused", func() bool { return wobs.counts().contended >= 4 })

	srv.Pause()
	pausedAt := time.Now()
	lostAt := make([]time.Time, len(leases))
	for i, l := range leases {
		select {
		case <-l.Done():
			lostAt[i] = time.Now()
		case <-time.After(pause + 5*time.Second):
			t.Fatalf("lease %s not lost while Redis is frozen", l.Key())
		}
	}
	if wait := pause - time.Since(pausedAt); wait > 0 {
		time.Sleep(wait) // the fault's duration, not a synchronisation
	}
	srv.Resume()
	resumedAt := time.Now()
	live.Healed()
	close(healed)
	for i, l := range leases {
		if !isLost(l) {
			t.Errorf("lease %s: cause %v", l.Key(), context.Cause(l.Context()))
		}
		if !lostAt[i].Before(resumedAt) {
			t.Errorf("lease %s lost at %v, after the resume", l.Key(), lostAt[i].Sub(pausedAt))
		}
		if lostAt[i].Sub(pausedAt) > ttl+500*time.Millisecond {
			t.Errorf("lease %s lost %v into the pause (TTL %v)", l.Key(), lostAt[i].Sub(pausedAt), ttl)
		}
	}
	work.Wait()
	wg.Wait()
	if err := live.Check(ttl + 3*time.Second); err != nil {
		t.Fatal(err)
	}
	verdict(t, hist, res, false)
	for _, l := range leases {
		_ = l.Release(ctx)
	}
	noLeftovers(t, 5*time.Second, srv.Client)
	t.Logf("holder leases lost %v and %v into the pause; %d waiters got ErrUnavailable; all acquired within %v of the resume",
		lostAt[0].Sub(pausedAt).Round(time.Millisecond), lostAt[1].Sub(pausedAt).Round(time.Millisecond), failed.Load(), live.Latest().Round(time.Millisecond))
}
