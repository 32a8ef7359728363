package faults_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Scenario 13: semaphores and read/write locks through a frozen server.
// Workers of three Clients loop on a semaphore of 2 and on a read/write
// lock (TTL 1s) while the server is frozen (SIGSTOP) for 2.5s: leases end
// at their local deadlines during the pause, and afterwards every worker
// acquires again within a bound. The checkers: never more than 2 believed
// permits at once (Excess), never a writer overlapping anyone
// (RWConflicts), grants' tokens increasing per key (TokenInversions), and
// no holder entry left behind.
func TestS13SharedThroughServerPause(t *testing.T) {
	const ttl = time.Second
	const pause = 2500 * time.Millisecond
	const permits = 2
	srv := redistest.Start(t)
	hist := faults.NewHistory()
	ctx := testkit.Context(t, 90*time.Second)

	type worker struct {
		who  string
		mode string
		c    *core.Client
	}
	var workers []worker
	for i := range 3 {
		c := newClient(t, srv.NewClient(readTimeout(5*time.Second)), core.WithTTL(ttl), core.WithOwner(fmt.Sprint("c", i)))
		workers = append(workers,
			worker{fmt.Sprint("c", i, "/permit/0"), faults.ModePermit, c},
			worker{fmt.Sprint("c", i, "/permit/1"), faults.ModePermit, c},
			worker{fmt.Sprint("c", i, "/read"), faults.ModeRead, c},
			worker{fmt.Sprint("c", i, "/write"), faults.ModeWrite, c},
		)
	}
	var names []string
	for _, w := range workers {
		names = append(names, w.who)
	}
	live := faults.NewLiveness(names...)
	healed := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := false // a round begun after the heal counts for liveness
			for round := 0; round < 400; round++ {
				select {
				case <-healed:
					if after {
						return // one acquire after the heal is enough
					}
					after = true
				default:
				}
				var l *core.Lease
				var err error
				key := "s13:rw"
				switch w.mode {
				case faults.ModePermit:
					key = "s13:sem"
					l, err = w.c.Semaphore(key, permits).Acquire(ctx, core.Wait(20*time.Second))
				case faults.ModeRead:
					l, err = w.c.RWLock(key).RLock(ctx, core.Wait(20*time.Second))
				default:
					l, err = w.c.RWLock(key).Lock(ctx, core.Wait(20*time.Second))
				}
				if err != nil {
					if after {
						live.Failed(w.who, err)
						return
					}
					continue // the pause: Redis did not answer, try again
				}
				if after {
					live.Acquired(w.who)
				}
				hd := hist.BeginMode(w.who, w.mode, l)
				select { // the work: until the lease ends or 30ms pass
				case <-l.Done():
				case <-time.After(30 * time.Millisecond):
				}
				hd.Released()
				_ = l.Release(ctx) // ErrLost / ErrUnavailable during the pause
			}
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "holds before the pause", func() bool { return len(hist.Intervals()) >= 20 })
	// Held through the pause: a permit and a read side that end at their
	// local deadline while the server is frozen.
	pinned := newClient(t, srv.NewClient(), core.WithTTL(ttl), core.WithOwner("pinned"))
	pl, err := pinned.Semaphore("s13:sem", permits).Acquire(ctx, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rl, err := pinned.RWLock("s13:rw").RLock(ctx, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pinnedHolds := []*faults.Hold{hist.BeginMode("pinned", faults.ModePermit, pl), hist.BeginMode("pinned", faults.ModeRead, rl)}
	srv.Pause()
	for _, l := range []*core.Lease{pl, rl} {
		recv(t, l.Done(), 10*time.Second, "a pinned lease's end during the pause")
	}
	for _, hd := range pinnedHolds {
		hd.Close()
	}
	time.Sleep(pause - ttl) // the rest of the fault's length
	srv.Resume()
	live.Healed()
	close(healed)
	wg.Wait()
	if err := live.Check(10 * time.Second); err != nil {
		t.Error(err)
	}
	ivs := hist.Intervals()
	var sem, rw []faults.Interval
	for _, iv := range ivs {
		if iv.Key == "s13:sem" {
			sem = append(sem, iv)
		} else {
			rw = append(rw, iv)
		}
	}
	if c := faults.Excess(sem, permits); len(c) > 0 {
		t.Errorf("more than %d permits believed at once: %v", permits, c[0])
	}
	if o := faults.RWConflicts(rw); len(o) > 0 {
		t.Errorf("a writer overlapped another holder: %v", o[0])
	}
	// Concurrent holders begin in any order, so tokens are checked where
	// holds exclude: the writes, in the order they began.
	var writes []faults.Interval
	lost := 0
	for _, iv := range ivs {
		if iv.Mode == faults.ModeWrite {
			writes = append(writes, iv)
		}
		if iv.End == faults.EndContext || iv.End == faults.EndUntil {
			lost++
		}
	}
	if inv := faults.TokenInversions(writes); len(inv) > 0 {
		t.Errorf("write tokens not increasing: %v", inv[0])
	}
	if lost < 2 {
		t.Errorf("%d leases ended by their deadline during the pause, want the 2 pinned ones at least", lost)
	}
	t.Logf("%d permit holds, %d read/write holds, %d ended by loss", len(sem), len(rw), lost)
	noLeftovers(t, 2*ttl, srv.NewClient())
}
