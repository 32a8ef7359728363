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

// Scenario 14: several keys at once through a frozen server. Workers of
// three Clients take overlapping sets of keys ({a,b}, {b,c}, {c,a}, in
// either order) with AcquireAll (TTL 1s) while the server is frozen for
// 2.5s, and a pinned holder keeps {a,b,c} through the pause: its leases end
// at their local deadlines, and with them its belief in the whole set.
// Each multi-key hold is recorded as one belief per key that ends when the
// group's does (History.BeginGroup), so a key lost and taken by another
// while the group still believed it held them all is an overlap. Checks:
// no overlap on any key, tokens increasing per key, every worker acquires
// again after the heal, nothing left behind.
func TestS14MultiKeyThroughServerPause(t *testing.T) {
	const ttl = time.Second
	const pause = 2500 * time.Millisecond
	srv := redistest.Start(t)
	hist := faults.NewHistory()
	ctx := testkit.Context(t, 90*time.Second)
	sets := [][]string{{"s14:a", "s14:b"}, {"s14:c", "s14:b"}, {"s14:c", "s14:a"}, {"s14:b", "s14:a"}}

	var names []string
	type worker struct {
		who  string
		keys []string
		c    *core.Client
	}
	var workers []worker
	for i := range 3 {
		c := newClient(t, srv.NewClient(readTimeout(5*time.Second)), core.WithTTL(ttl), core.WithOwner(fmt.Sprint("c", i)))
		for j, set := range sets {
			who := fmt.Sprint("c", i, "/", j)
			workers = append(workers, worker{who, set, c})
			names = append(names, who)
		}
	}
	live := faults.NewLiveness(names...)
	healed := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := false
			for round := 0; round < 400; round++ {
				select {
				case <-healed:
					if after {
						return
					}
					after = true
				default:
				}
				m, err := w.c.AcquireAll(ctx, w.keys, core.Wait(20*time.Second))
				if err != nil {
					if after {
						live.Failed(w.who, err)
						return
					}
					continue // the pause
				}
				if after {
					live.Acquired(w.who)
				}
				g := hist.BeginGroup(w.who, m.Context(), leasesOf(m)...)
				select { // the work on the whole set
				case <-m.Done():
				case <-time.After(10 * time.Millisecond):
				}
				g.Released()
				_ = m.Release(ctx)
			}
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "holds before the pause", func() bool { return len(hist.Intervals()) >= 20 })

	pinned := newClient(t, srv.NewClient(), core.WithTTL(ttl), core.WithOwner("pinned"))
	pm, err := pinned.AcquireAll(ctx, []string{"s14:a", "s14:b", "s14:c"}, core.Wait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pg := hist.BeginGroup("pinned", pm.Context(), leasesOf(pm)...)
	srv.Pause()
	recv(t, pm.Done(), 10*time.Second, "the pinned set's end during the pause")
	pg.Close()
	time.Sleep(pause - ttl) // the rest of the fault's length
	srv.Resume()
	live.Healed()
	close(healed)
	wg.Wait()

	if err := live.Check(10 * time.Second); err != nil {
		t.Error(err)
	}
	ivs := hist.Intervals()
	if ov := faults.Overlaps(ivs); len(ov) > 0 {
		t.Errorf("a key held by two believed holds (a partial set believed whole): %v", ov[0])
	}
	if inv := faults.TokenInversions(ivs); len(inv) > 0 {
		t.Errorf("tokens not increasing: %v", inv[0])
	}
	lost := 0
	for _, iv := range ivs {
		if iv.Who == "pinned" && iv.End != faults.EndReleased {
			lost++
		}
	}
	if lost != 3 {
		t.Errorf("the pinned set ended by loss on %d keys, want 3", lost)
	}
	t.Logf("%d believed key holds", len(ivs))
	_ = pm.Release(ctx)
	noLeftovers(t, 2*ttl, srv.NewClient())
}

func leasesOf(m *core.MultiLease) []faults.Lease {
	var out []faults.Lease
	for _, l := range m.Leases() {
		out = append(out, l)
	}
	return out
}
