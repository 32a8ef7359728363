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
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Scenario 5 with lines of hand-offs: the lock's Redis restarted empty
// while workers of two Clients (three each, through proxies that delay
// replies by 1 ms, so that lines of hand-offs form) take one hot key. Each
// round, with the workers of both Clients paused, a pinned lease A of one
// Client takes the key; that Client's workers then queue behind it; the
// server restarts empty; a pinned lease P of the other Client takes the
// key on the new server; then A releases, which hands the lock to the
// first worker queued behind it, and the receivers hand on before the
// reply (A's Client was idle before A, so its queue knows of no other
// process waiting and does not cut the line short), while P holds. One
// worker of each Client holds 20 ms, so a receiver may still hold when the
// reply comes. In the last round A does not release: its next renewal
// finds the loss (as it does in any round where P's Client reaches the
// new server only after that renewal: then there is no line). Between
// rounds every worker runs.
//
// docs/guarantees.md says which holds the new server's grants may
// overlap; the test counts every overlap of believed holds (any Client,
// hand-off or not) and judges each by it. Holds granted by one server
// never overlap; in an overlap across a restart, the hold of the older
// server is either
//   - held from before the restart: it ends by its next renewal (at most
//     TTL/3 after the restart, plus as long again for that renewal's
//     reply and a retry);
//   - granted after the restart by a hand-off of its Client (its token
//     continues the old server's): it started before its Client learned
//     that the line was refused (the first failed Release or lost lease
//     of that Client with a token of the old server: the hand-off's
//     reply), or was handed out already lost, and it ended by its release
//     before that reply or by its context (cause ErrLost) at the reply.
//     No hand-off is granted from the line after the refusal.
//
// Tokens within each server's grants increase in hold order, the fenced
// resource loses no update and refuses the old tokens' late writes, and
// nothing is left behind.
func TestS05RestartEmptyHandoffLines(t *testing.T) {
	const (
		ttl     = s05TTL
		key     = "s05:line"
		rounds  = 4
		workers = 3
	)
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 120*time.Second)
	run := &restartLines{hist: faults.NewHistory(), res: faults.NewResource(), meta: map[string]holdMeta{}}
	var clients []*core.Client
	for i := range 2 {
		px := newProxy(t, srv.Addr())
		px.SetLatency(tcpproxy.Downstream, time.Millisecond)
		o := &lineObserver{run: run, client: i}
		clients = append(clients, newClient(t, via(srv, px.Addr(), readTimeout(5*time.Second)),
			core.WithTTL(ttl), core.WithObserver(o), core.WithOwner(fmt.Sprint("c", i))))
	}

	stop := make(chan struct{})
	var paused [2]atomic.Bool
	var wg sync.WaitGroup
	for ci, c := range clients {
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if paused[ci].Load() {
						time.Sleep(time.Millisecond)
						continue
					}
					hold := time.Duration(i%2) * 200 * time.Microsecond
					if g == 0 {
						hold = 20 * time.Millisecond // real work: still held when a refused hand-off's reply comes
					}
					run.cycle(t, ctx, c, ci, fmt.Sprint(ci, "/", g, "#", i), key, hold)
				}
			}()
		}
	}
	idle := func(c *core.Client) bool { return len(c.Locks()) == 0 }

	var losses []time.Time
	var replies []time.Duration // from A's Release to its Client learning the line was refused
	for k := range rounds {
		ia, ib := k%2, 1-k%2
		a, b := clients[ia], clients[ib]
		run.awaitHolds(t, 50)
		paused[0].Store(true)
		paused[1].Store(true)
		testkit.WaitFor(t, 10*time.Second, "both Clients idle", func() bool { return idle(a) && idle(b) })
		la, ha := run.pin(t, ctx, a, ia, fmt.Sprint("A", k), key)
		paused[ia].Store(false)
		testkit.WaitFor(t, 10*time.Second, "A's workers queued behind it", func() bool { return lockState(a, key).Waiters == workers })
		srv.Kill()
		lossAt := time.Now()
		losses = append(losses, lossAt)
		srv.Restart(false)
		var lp *core.Lease
		var hp *faults.Hold
		testkit.WaitFor(t, 20*time.Second, "P granted by the new server", func() bool {
			lp, hp = run.pin(t, ctx, b, ib, fmt.Sprint("P", k), key)
			return lp != nil
		})
		if lp.Token() < lossAt.UnixMicro() {
			t.Fatalf("round %d: P's token %d is not the new server's (restarted at %d µs)", k, lp.Token(), lossAt.UnixMicro())
		}
		if err := run.res.Increment(key, lp.Token(), 0); err != nil {
			t.Fatalf("round %d: P's write: %v", k, err)
		}
		var releasedAt time.Time
		switch {
		case la.Err() != nil:
			// A's renewal came first (P's Client took long to reach the new
			// server): no line this round.
			t.Logf("round %d: A's lease ended (%v) before P took the lock", k, la.Err())
		case k == rounds-1:
			// ha stays open: its end is its context's, which History
			// records as the context ends (a Close right at that moment
			// could stop the recording first and read Until instead).
			testkit.Recv(t, la.Done(), 2*ttl, "A's renewal to find the loss")
			if !isLost(la) {
				t.Errorf("round %d: A's lease ended with %v, want ErrLost", k, context.Cause(la.Context()))
			}
		default:
			ha.Released()
			releasedAt = time.Now()
			if err := la.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
				t.Errorf("round %d: A's Release after the restart = %v, want ErrNotHeld", k, err)
			}
		}
		// P holds until A's Client learned and holds nothing.
		testkit.WaitFor(t, 10*time.Second, "A's Client to learn", func() bool { return !run.learned(ia, lossAt).IsZero() && !lockState(a, key).Held })
		if !releasedAt.IsZero() {
			replies = append(replies, run.learned(ia, lossAt).Sub(releasedAt).Round(10*time.Microsecond))
		}
		paused[ib].Store(false)
		hp.Released()
		if err := lp.Release(ctx); err != nil {
			t.Errorf("round %d: P's Release: %v", k, err)
		}
	}
	run.awaitHolds(t, 50)
	close(stop)
	wg.Wait()

	n := run.judge(t, losses, ttl)
	st := run.res.Stats()
	t.Logf("%d holds over %d restarts; %d overlaps: %d with a hold from before the restart, %d with a receiver of a refused line (%d of them ended by its context, the longest %v); A's Release to its Client learning: %v; resource %+v",
		n.holds, len(losses), n.overlaps, n.fromBefore, n.handedOn, n.endedByContext, n.longest.Round(10*time.Microsecond), replies, st)
	if st.LostUpdates != 0 || st.Rejected == 0 {
		t.Errorf("fenced resource %+v: want no lost update and the old tokens' late writes refused", st)
	}
	if len(replies) == 0 || n.fromBefore == 0 || n.handedOn == 0 {
		t.Errorf("proved little: %d lines, %d overlaps with a hold from before the restart, %d with a receiver of a refused line", len(replies), n.fromBefore, n.handedOn)
	}
	noLeftovers(t, ttl+3*time.Second, srv.Client)
}

// restartCounts are what judge counted: holds, overlaps, and of these the
// ones with a hold from before a restart and with a receiver of a refused
// line (how many ended by their context, and the longest).
type restartCounts struct {
	holds, overlaps, fromBefore, handedOn, endedByContext int
	longest                                               time.Duration
}

// judge checks every overlap of the recorded holds against what
// docs/guarantees.md allows after the data losses at losses (see
// TestS05RestartEmptyHandoffLines): a server's grants never overlap, and
// an older server's hold in an overlap either was held from before the
// restart and ended by its next renewal, or was handed on after it and
// ended by the refused hand-off's reply.
func (r *restartLines) judge(t *testing.T, losses []time.Time, ttl time.Duration) restartCounts {
	ivs := r.hist.Intervals()
	epoch := func(iv faults.Interval) int {
		e := 0
		for _, l := range losses {
			if iv.Token >= l.UnixMicro() {
				e++
			}
		}
		return e
	}
	byEpoch := make([][]faults.Interval, len(losses)+1)
	for _, iv := range ivs {
		byEpoch[epoch(iv)] = append(byEpoch[epoch(iv)], iv)
	}
	for e, holds := range byEpoch {
		if ov := faults.Overlaps(holds); len(ov) > 0 {
			t.Errorf("holds granted by server %d overlap: %v", e, ov[0])
		}
		if inv := faults.TokenInversions(holds); len(inv) > 0 {
			t.Errorf("tokens of server %d not increasing in hold order: %v", e, inv[0])
		}
	}
	all := faults.Overlaps(ivs)
	n := restartCounts{holds: len(ivs), overlaps: len(all)}
	for _, o := range all {
		if epoch(o.First) == epoch(o.Second) {
			continue // reported above
		}
		old := o.First
		if epoch(o.Second) < epoch(old) {
			old = o.Second
		}
		loss := losses[epoch(old)]
		m := r.metaOf(old.Who)
		switch {
		case old.From.Before(loss):
			n.fromBefore++
			if old.To.Sub(loss) > 2*ttl/3 {
				t.Errorf("a hold from before the restart believed %v after it, beyond its next renewal: %v", old.To.Sub(loss), o)
			}
		case m.handoff:
			n.handedOn++
			n.longest = max(n.longest, o.Duration())
			if old.End == faults.EndContext {
				n.endedByContext++
			}
			learned := r.learned(m.client, loss)
			switch {
			case m.bornLost:
			case learned.IsZero() || !old.From.Before(learned):
				t.Errorf("a hand-off granted after its Client learned the line was refused (%s): %v", learned.Format("15:04:05.000000"), o)
			case old.To.After(learned) && old.End != faults.EndContext:
				t.Errorf("a receiver believed past the refused hand-off's reply (%s) without its context ending: %v", learned.Format("15:04:05.000000"), o)
			}
			if old.To.Sub(old.From) > ttl/3 {
				t.Errorf("a receiver believed %v on a refused line: %v", old.To.Sub(old.From), o)
			}
		default:
			t.Errorf("an overlap the docs do not allow (the older server's hold was granted after the restart, not by a hand-off): %v", o)
		}
	}
	for _, o := range all {
		t.Logf("checker: %v", o)
	}
	return n
}

// restartLines records the holds of TestS05RestartEmptyHandoffLines and
// what each Client learned when.
type restartLines struct {
	hist *faults.History
	res  *faults.Resource

	mu    sync.Mutex
	meta  map[string]holdMeta // by Interval.Who
	holds int
	// failed: per Client, when a Release failed or a lease was lost, and
	// the token (the Client learned its lease was not Redis's).
	failed [2][]tokenAt
}

type holdMeta struct {
	client   int
	handoff  bool // granted by a hand-off of its Client
	bornLost bool // Acquire returned a lease already lost
}

type tokenAt struct {
	at    time.Time
	token int64
}

// cycle is one worker's turn: acquire, a fenced increment, release.
func (r *restartLines) cycle(t *testing.T, ctx context.Context, c *core.Client, ci int, who, key string, hold time.Duration) {
	l, err := c.Acquire(ctx, key, core.Wait(20*time.Second))
	if err != nil {
		if !errors.Is(err, core.ErrUnavailable) && !errors.Is(err, core.ErrNotAcquired) {
			t.Errorf("%s acquire: %v", who, err)
		}
		time.Sleep(time.Millisecond) // a refused dial fails at once
		return
	}
	hd := r.begin(who, ci, l)
	_ = r.res.Increment(key, l.Token(), hold) // a stale token's write is refused: counted by the resource
	hd.Released()
	if err := l.Release(ctx); err != nil && !errors.Is(err, core.ErrNotHeld) && !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("%s release: %v", who, err)
	}
}

// pin acquires key for a pinned lease (nil when it failed for the
// restart).
func (r *restartLines) pin(t *testing.T, ctx context.Context, c *core.Client, ci int, who, key string) (*core.Lease, *faults.Hold) {
	l, err := c.Acquire(ctx, key, core.Wait(20*time.Second))
	if errors.Is(err, core.ErrUnavailable) {
		return nil, nil
	}
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	return l, r.begin(who, ci, l)
}

func (r *restartLines) begin(who string, ci int, l *core.Lease) *faults.Hold {
	hd := r.hist.Begin(who, l)
	handoff, _ := l.Context().Value(handoffKey{}).(bool)
	r.mu.Lock()
	r.meta[who] = holdMeta{client: ci, handoff: handoff, bornLost: l.Err() != nil}
	r.holds++
	r.mu.Unlock()
	return hd
}

func (r *restartLines) metaOf(who string) holdMeta {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta[who]
}

// awaitHolds waits for n more holds.
func (r *restartLines) awaitHolds(t *testing.T, n int) {
	r.mu.Lock()
	want := r.holds + n
	r.mu.Unlock()
	testkit.WaitFor(t, 20*time.Second, fmt.Sprint(n, " holds"), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.holds >= want
	})
}

// learned is when Client ci first learned, after the server's data loss at
// loss, that a lease with a token of that server was not held: a failed
// Release or a lost lease (zero when it has not).
func (r *restartLines) learned(ci int, loss time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, f := range r.failed[ci] {
		if f.token < loss.UnixMicro() && f.at.After(loss) && (first.IsZero() || f.at.Before(first)) {
			first = f.at
		}
	}
	return first
}

func (r *restartLines) fail(ci int, token int64) {
	now := time.Now()
	r.mu.Lock()
	r.failed[ci] = append(r.failed[ci], tokenAt{now, token})
	r.mu.Unlock()
}

type handoffKey struct{}

// lineObserver marks each lease's context with whether a hand-off granted
// it, and tells restartLines of failed Releases and lost leases.
type lineObserver struct {
	core.NopObserver
	run    *restartLines
	client int
}

func (o *lineObserver) AcquireEnd(ctx context.Context, _ core.AcquireInfo, r core.AcquireResult) context.Context {
	return context.WithValue(ctx, handoffKey{}, r.Handoff)
}

func (o *lineObserver) Lost(_ context.Context, l core.LeaseInfo, _ error) {
	o.run.fail(o.client, l.Token)
}

func (o *lineObserver) Released(_ context.Context, l core.LeaseInfo, err error) {
	if err != nil {
		o.run.fail(o.client, l.Token)
	}
}

// lockState is what c.Locks says of key (zero when c neither holds nor
// waits for it).
func lockState(c *core.Client, key string) core.LockState {
	for _, s := range c.Locks() {
		if s.Key == key {
			return s
		}
	}
	return core.LockState{}
}
