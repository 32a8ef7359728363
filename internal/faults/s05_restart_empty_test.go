package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// s05TTL gives a renewal period (TTL/3 = 2s) long enough to restart the
// servers and let a second client acquire before the holder's next renewal.
const s05TTL = 6 * time.Second

// dataLoss is the common shape of scenario 5: A holds the lock and is in the
// middle of a read-modify-write; right after one of its renewals is
// confirmed, restart() loses data; B then tries to take the lock.
//
// When B gets it (wantTaken), A still believes it holds the lock until its
// next renewal finds another owner: the checker must see the believed-hold
// overlap, A's loss must come from that renewal (before its deadline), and
// A's late write must be rejected by the fenced resource because B's token
// is larger. Otherwise A keeps its lease through more renewals and B is
// refused.
func dataLoss(t *testing.T, a, b *core.Client, obs *observer, restart func(), wantTaken bool, finalCheck ...redis.UniversalClient) {
	t.Helper()
	const key = "s05:held"
	hist, res := faults.NewHistory(), faults.NewResource()
	ctx := testkit.Context(t, 60*time.Second)
	la, err := a.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ha := hist.Begin("a", la)
	snap := res.Read(key) // A's read-modify-write starts
	recv(t, obs.renewed, 2*s05TTL, "A's first renewal")
	restart()
	restartedAt := time.Now()

	lb, err := b.TryAcquire(ctx, key)
	if !wantTaken {
		if !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("B's acquire after the restart = %v, want ErrNotAcquired", err)
		}
		// A's lease lives on: its next renewal is confirmed.
		recv(t, obs.renewed, 2*s05TTL, "A's renewal after the restart")
		if la.Err() != nil {
			t.Fatalf("A's lease ended: %v", la.Err())
		}
		if err := res.Write(key, la.Token(), snap, snap.Value+1); err != nil {
			t.Fatalf("A's write: %v", err)
		}
		ha.Released()
		if err := la.Release(ctx); err != nil {
			t.Fatalf("A's release: %v", err)
		}
		verdict(t, hist, res, false)
		noLeftovers(t, 5*time.Second, finalCheck...)
		return
	}
	if err != nil {
		t.Fatalf("B's acquire after the data loss = %v", err)
	}
	if la.Err() != nil {
		t.Fatalf("precondition: A's renewal noticed the loss (%v) before B acquired, %v after the restart", la.Err(), time.Since(restartedAt))
	}
	hb := hist.Begin("b", lb)
	if err := res.Increment(key, lb.Token(), 0); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	// A, still believing, finishes its read-modify-write: rejected.
	werr := res.Write(key, la.Token(), snap, snap.Value+1)
	if !errors.Is(werr, faults.ErrStaleToken) {
		t.Errorf("A's late write = %v, want a stale-token rejection", werr)
	}
	// A learns it on its next renewal, before its deadline.
	deadline := la.Until()
	select {
	case <-la.Done():
	case <-time.After(2 * s05TTL):
		t.Fatal("A never noticed the loss")
	}
	lostAt := time.Now()
	ha.Close()
	if !isLost(la) {
		t.Fatalf("A's cause %v", context.Cause(la.Context()))
	}
	if !lostAt.Before(deadline) {
		t.Errorf("A's loss came from its deadline (%v late), not from a renewal", lostAt.Sub(deadline))
	}
	if lb.Token() <= la.Token() {
		t.Errorf("B's token %d not above A's %d", lb.Token(), la.Token())
	}
	hb.Released()
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("B's release: %v", err)
	}
	verdict(t, hist, res, true)
	if st := res.Stats(); st.Rejected != 1 || st.Accepted != 1 {
		t.Errorf("resource %+v", st)
	}
	// A lost lease is not released: under Redlock A's token stays on the
	// node that kept its data until its TTL runs out.
	noLeftovers(t, s05TTL+3*time.Second, finalCheck...)
	t.Logf("B acquired %v after the restart; A lost %v after it, %v before its deadline; %v",
		hist.Intervals()[1].From.Sub(restartedAt).Round(time.Millisecond), lostAt.Sub(restartedAt).Round(time.Millisecond),
		deadline.Sub(lostAt).Round(time.Millisecond), hist.Overlaps())
}

// Scenario 5, single primary: restarted empty while held, a second client
// can take the lock at once; the holder's next renewal detects the loss
// (ErrLost, before its deadline) — until then both believe, which the
// checker reports and the fenced resource defuses (B's token is larger:
// tokens are floored by the server's TIME). Restarted with its data, the
// lease survives (its next renewal is confirmed, a second client is refused).
func TestS05RestartSinglePrimary(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "empty", true: "data kept"}[keep]
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			obs := newObserver()
			a := newClient(t, srv.NewClient(), core.WithTTL(s05TTL), core.WithObserver(obs), core.WithOwner("a"))
			b := newClient(t, srv.NewClient(), core.WithTTL(s05TTL), core.WithOwner("b"))
			dataLoss(t, a, b, obs, func() { srv.Restart(keep) }, !keep, srv.Client)
		})
	}
}

// Scenario 5, Redlock on 3 nodes: one node restarted empty loses nothing
// (the lease is still on the majority, renewals confirm on 2 of 3, a second
// client is refused); a majority restarted empty is the documented failure:
// a second client acquires while the first still believes, the checker
// catches the overlap, and the fenced resource rejects the older token.
func TestS05RestartRedlock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart int
	}{{"one of 3 empty", 1}, {"two of 3 empty", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			srvs := redistest.StartN(t, 3)
			obs := newObserver()
			opts := []core.Option{core.WithTTL(s05TTL), core.WithNodeTimeout(300 * time.Millisecond)}
			a := newRedlock(t, clientsOf(srvs), append(opts, core.WithObserver(obs), core.WithOwner("a"))...)
			b := newRedlock(t, clientsOf(srvs), append(opts, core.WithOwner("b"))...)
			restart := func() {
				for _, s := range srvs[:tc.restart] {
					s.Restart(false)
				}
			}
			dataLoss(t, a, b, obs, restart, tc.restart >= 2, allClients(srvs)...)
		})
	}
}
