package faults_test

import (
	"fmt"
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
// (RWConflicts), write tokens increasing (TokenInversions), no write the
// fenced resource refused or lost, and no holder entry left behind.
func TestS13SharedThroughServerPause(t *testing.T) {
	const ttl = time.Second
	const pause = 2500 * time.Millisecond
	const permits = 2
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 90*time.Second)
	var clients []*core.Client
	for i := range 3 {
		clients = append(clients, newClient(t, srv.NewClient(readTimeout(5*time.Second)), core.WithTTL(ttl), core.WithOwner(fmt.Sprint("c", i))))
	}
	run := runShared(t, ctx, clients, "s13", permits, 1)
	hist := run.hist
	testkit.WaitFor(t, 10*time.Second, "holds before the pause", func() bool { return len(hist.Intervals()) >= 20 })
	// Held through the pause: a permit and a read side that end at their
	// local deadline while the server is frozen.
	pinned := newClient(t, srv.NewClient(), core.WithTTL(ttl), core.WithOwner("pinned"))
	pl, err := pinned.Semaphore(run.semKey, permits).Acquire(ctx, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rl, err := pinned.RWLock(run.rwKey).RLock(ctx, core.Wait(20*time.Second))
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
	run.heal()
	run.wait(t, 10*time.Second)
	ivs := hist.Intervals()
	checkShared(t, "through the pause", ivs, permits)
	if st := run.res.Stats(); st.LostUpdates != 0 || st.Rejected != 0 {
		t.Errorf("fenced resource of the writes: %+v", st)
	}
	sem, lost := 0, 0
	for _, iv := range ivs {
		if iv.Mode == faults.ModePermit {
			sem++
		}
		if iv.End == faults.EndContext || iv.End == faults.EndUntil {
			lost++
		}
	}
	if lost < 2 {
		t.Errorf("%d leases ended by their deadline during the pause, want the 2 pinned ones at least", lost)
	}
	t.Logf("%d permit holds, %d read/write holds, %d ended by loss", sem, len(ivs)-sem, lost)
	noLeftovers(t, 2*ttl, srv.NewClient())
}
