package faults_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 13 through a restart: the workers of
// TestS13SharedThroughServerPause (three Clients, a semaphore of 2, a
// read/write lock, TTL 1s) while the server is killed and started again,
// and a pinned Client holding a permit and the write side across the
// restart (TTL 6s, renewed together right before it, so that their next
// renewal comes 2s after it).
//
// With its data (an append-only file with fsync always, the mitigation
// docs/guarantees.md names: the workers write up to the kill, and a grant
// between a SAVE and the kill would be lost), the restart loses nothing:
// the checkers are green over the whole run, the pinned leases' next
// renewals are confirmed and the pinned writer's write is accepted.
//
// Empty, it is scenario 5's data loss (docs/guarantees.md) for the shared
// kinds and is judged the same way: the new server's grants overlap holds
// the old one granted — the checkers must report it — and a holder learns
// its loss on its next renewal (ErrLost before its deadline), until when
// it believes; the pinned writer's late write is rejected by the fenced
// resource (the new writers' tokens are larger). Among the holds either
// server granted, the checkers are green.
//
// Either way every worker acquires 3 times after the restart and nothing
// is left behind.
func TestS13SharedThroughRestart(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "empty", true: "data kept"}[keep]
		t.Run(name, func(t *testing.T) { sharedRestart(t, keep) })
	}
}

func sharedRestart(t *testing.T, keep bool) {
	const ttl = time.Second
	const permits = 2
	var opts []redistest.Option
	if keep {
		opts = append(opts, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	}
	srv := redistest.Start(t, opts...)
	ctx := testkit.Context(t, 90*time.Second)
	var clients []*core.Client
	var rdbs []*redis.Client
	for i := range 3 {
		rdb := srv.NewClient(readTimeout(5 * time.Second))
		rdbs = append(rdbs, rdb)
		clients = append(clients, newClient(t, rdb, core.WithTTL(ttl), core.WithOwner(fmt.Sprint("c", i))))
	}
	run := runShared(t, ctx, clients, "s13r", permits, 3)
	hist := run.hist
	testkit.WaitFor(t, 10*time.Second, "holds before the restart", func() bool { return len(hist.Intervals()) >= 20 })

	obs := newObserver()
	pinned := newClient(t, srv.NewClient(), core.WithTTL(s05TTL), core.WithObserver(obs), core.WithOwner("pinned"))
	pl, err := pinned.Semaphore(run.semKey, permits).Acquire(ctx, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ph := hist.BeginMode("pinned", faults.ModePermit, pl)
	wl, err := pinned.RWLock(run.rwKey).Lock(ctx, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wh := hist.BeginMode("pinned", faults.ModeWrite, wl)
	snap := run.res.Read(run.rwKey) // the pinned writer's read-modify-write starts
	pinnedLeases := []*core.Lease{pl, wl}
	for _, l := range pinnedLeases {
		if err := l.Extend(ctx, s05TTL); err != nil { // the next renewal: TTL/3 from here
			t.Fatal(err)
		}
	}
	deadlines := []time.Time{pl.Until(), wl.Until()}
	// Tokens are the server's TIME in microseconds (or the last token + 1,
	// a few microseconds ahead at most), so the moment between the old
	// server's end and the new one's start splits the grants by server:
	// by token, not by when the reply was read, which can be after that.
	var lossAt time.Time
	if keep {
		srv.Restart(true)
	} else {
		srv.Kill()
		lossAt = time.Now()
		srv.Restart(false) // the Kill is done: only the start, without data
	}
	restartedAt := time.Now()
	// The fault is undone for a worker when its go-redis client can reach
	// the new server: a pool that saw PoolSize dials refused fails fast
	// with the last dial error until its background probe (once a second)
	// connects again.
	for i, rdb := range rdbs {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprint("c", i, "'s client to reach the new server"), func() bool { return rdb.Ping(ctx).Err() == nil })
	}
	reachedAt := time.Now()
	run.heal()

	if keep {
		testkit.WaitFor(t, 2*s05TTL, "the pinned leases' renewals after the restart", func() bool {
			obs.mu.Lock()
			defer obs.mu.Unlock()
			n := 0
			for _, at := range obs.renewedAt {
				if at.After(restartedAt) {
					n++
				}
			}
			return n >= len(pinnedLeases)
		})
		for _, l := range pinnedLeases {
			if l.Err() != nil {
				t.Fatalf("a pinned lease ended across the restart with its data: %v", l.Err())
			}
		}
		if err := run.res.Write(run.rwKey, wl.Token(), snap, snap.Value+1); err != nil {
			t.Errorf("the pinned writer's write: %v", err)
		}
		for _, hd := range []*faults.Hold{ph, wh} {
			hd.Released()
		}
		for _, l := range pinnedLeases {
			if err := l.Release(ctx); err != nil {
				t.Errorf("the pinned release: %v", err)
			}
		}
	} else {
		// A new writer writes while the pinned one still believes; then
		// the pinned writer's late write is refused.
		testkit.WaitFor(t, 10*time.Second, "a write after the restart", func() bool {
			return run.res.Read(run.rwKey).Version > snap.Version
		})
		if wl.Err() != nil {
			t.Fatalf("precondition: the pinned writer noticed the loss (%v) before a new writer wrote, %v after the restart", wl.Err(), time.Since(restartedAt))
		}
		if err := run.res.Write(run.rwKey, wl.Token(), snap, snap.Value+1); !errors.Is(err, faults.ErrStaleToken) {
			t.Errorf("the pinned writer's late write = %v, want a stale-token rejection", err)
		}
		for i, l := range pinnedLeases {
			testkit.Recv(t, l.Done(), 2*s05TTL, "the pinned lease's loss")
			lostAt := time.Now()
			if !isLost(l) {
				t.Errorf("pinned %s lease's cause %v, want ErrLost", l.Key(), l.Err())
			}
			if !lostAt.Before(deadlines[i]) {
				t.Errorf("pinned %s lease's loss came from its deadline (%v late), not from a renewal", l.Key(), lostAt.Sub(deadlines[i]))
			}
		}
		for _, hd := range []*faults.Hold{ph, wh} {
			hd.Close()
		}
	}
	run.wait(t, 10*time.Second)

	ivs := hist.Intervals()
	t.Logf("every worker's client reached the new server %v after it started; the last worker's first acquire came %v after that",
		reachedAt.Sub(restartedAt).Round(time.Millisecond), run.live.Latest().Round(time.Millisecond))
	if keep {
		checkShared(t, "across the restart", ivs, permits)
		t.Logf("%d holds; the pinned writer's %v", len(ivs), wh.Interval())
	} else {
		var old, fresh []faults.Interval // granted by the server before the restart, by the one after
		for _, iv := range ivs {
			if iv.Token < lossAt.UnixMicro() {
				old = append(old, iv)
			} else {
				fresh = append(fresh, iv)
			}
		}
		checkShared(t, "granted before the restart", old, permits)
		checkShared(t, "granted after the restart", fresh, permits)
		// The data loss itself: the checkers must see the pinned holds
		// overlapped by the new server's grants.
		sem, rw, writes := sharedParts(ivs)
		crowds, conflicts := faults.Excess(sem, permits), faults.RWConflicts(rw)
		if len(crowds) == 0 || len(conflicts) == 0 {
			t.Errorf("the checkers missed the data loss: %d crowds, %d conflicts; history %v", len(crowds), len(conflicts), ivs)
		} else {
			t.Logf("checker: %v", crowds[0])
			t.Logf("checker: %v", conflicts[0])
		}
		if inv := faults.TokenInversions(writes); len(inv) > 0 {
			t.Errorf("write tokens not increasing across the data loss: %v", inv[0])
		}
		if len(fresh) == 0 { // run.wait has failed then; a panic on fresh[0] would hide it
			t.Fatalf("no hold granted after the restart (%d before it)", len(old))
		}
		first := fresh[0].From // the new server's first grant, as its holder saw it
		for _, iv := range fresh {
			if iv.From.Before(first) {
				first = iv.From
			}
		}
		t.Logf("%d holds granted before the restart, %d after, the first %v after the restart; the pinned permit and writer believed %v and %v beside the new grants",
			len(old), len(fresh), first.Sub(restartedAt).Round(time.Millisecond),
			ph.Interval().To.Sub(first).Round(time.Millisecond), wh.Interval().To.Sub(first).Round(time.Millisecond))
	}
	st := run.res.Stats()
	if wantRejected := map[bool]int64{false: 1, true: 0}[keep]; st.LostUpdates != 0 || st.Rejected != wantRejected {
		t.Errorf("fenced resource of the writes: %+v, want %d rejected and no lost update", st, wantRejected)
	}
	noLeftovers(t, 2*s05TTL, srv.NewClient())
}
