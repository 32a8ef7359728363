package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
)

// afterLoss checks what follows a lease lost to a late renewal: the holder's
// client sends nothing after the loss (no renewal, no re-acquire), its
// lease stays lost, another client acquires within the bound, and believed
// holds never overlap.
func afterLoss(t *testing.T, srv *redistest.Server, la *core.Lease, log *cmdLog, lostAt time.Time, hist *faults.History, bound time.Duration) {
	t.Helper()
	ctx := testkit.Context(t, 30*time.Second)
	if !isLost(la) {
		t.Fatalf("cause %v", context.Cause(la.Context()))
	}
	b := newClient(t, srv.NewClient(), core.WithOwner("b"))
	live := faults.NewLiveness("b")
	live.Healed()
	lb, err := b.Acquire(ctx, la.Key(), core.Wait(bound+5*time.Second))
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	live.Acquired("b")
	hb := hist.Begin("b", lb)
	if err := live.Check(bound); err != nil {
		t.Error(err)
	}
	if la.Err() == nil {
		t.Fatal("A's lease came back")
	}
	if sent := log.since(lostAt); len(sent) > 0 {
		t.Errorf("A's client sent after its lease was lost: %v", sent)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("B's token %d not above A's %d", lb.Token(), la.Token())
	}
	h, held, err := b.Inspect(ctx, la.Key())
	if err != nil || !held || h.Owner != "b" {
		t.Errorf("holder after B acquired: %+v %v %v", h, held, err)
	}
	hb.Released()
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	verdict(t, hist, nil, false)
	noLeftovers(t, 5*time.Second, srv.Client)
}

// Scenario 7a: the renewal's reply is delayed (proxy latency, 1.5s
// downstream) past the lease's validity. The server applies the renewal, but
// the holder cannot confirm it: its lease ends at its deadline (ErrLost),
// without waiting for the reply, and it never renews or re-acquires
// afterwards (nothing leaves its client); another client acquires once the
// renewed key expires on the server.
func TestS07RenewalReplyLate(t *testing.T) {
	const ttl = time.Second
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr())
	rdb := via(srv, px.Addr())
	log := &cmdLog{}
	rdb.AddHook(testkit.EachCommand(log.add))
	obs := newObserver()
	a := newClient(t, rdb, core.WithTTL(ttl), core.WithObserver(obs), core.WithOwner("a"))
	hist := faults.NewHistory()
	ctx := testkit.Context(t, 30*time.Second)

	la, err := a.Acquire(ctx, "s07:late")
	if err != nil {
		t.Fatal(err)
	}
	ha := hist.Begin("a", la)
	// One renewal first, so the server has the extend script cached and the
	// delayed renewal is applied (not refused with NOSCRIPT).
	recv(t, obs.renewed, 5*time.Second, "a first renewal")
	px.SetLatency(tcpproxy.Downstream, 1500*time.Millisecond)
	select {
	case <-la.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease kept with renewals unconfirmed")
	}
	lostAt := time.Now()
	ha.Close()
	if late := lostAt.Sub(la.Until()); late > 300*time.Millisecond {
		t.Errorf("lost %v after its deadline", late)
	}
	// The engine tells the Observer right after it ends the lease's
	// context: wait for that event rather than racing it.
	testkit.WaitFor(t, 5*time.Second, "the Observer to hear of the loss", func() bool { return obs.counts().lost >= 1 })
	if c := obs.counts(); c.renewed != 1 || c.lost != 1 {
		t.Errorf("observer: %+v (a renewal was confirmed?)", c)
	}
	afterLoss(t, srv, la, log, lostAt, hist, ttl+2*time.Second)
	// The late reply was due 1.5s after the renewal was sent (before
	// lostAt): past that, the lease is still lost and nothing was sent.
	if wait := time.Until(lostAt.Add(1500 * time.Millisecond)); wait > 0 {
		time.Sleep(wait) // the fault's duration, not a synchronisation
	}
	if la.Err() == nil || obs.counts().renewed != 1 || len(log.since(lostAt)) != 0 {
		t.Errorf("after the late reply: lease %v, %d renewals confirmed, sent %v", la.Err(), obs.counts().renewed, log.since(lostAt))
	}
	t.Logf("history %v", hist.Intervals())
}

// Scenario 7b: the server is frozen right after a confirmed renewal, and
// resumed just after the holder's local deadline (TTL − drift after that
// renewal was sent). The renewal sent into the frozen server cannot be
// confirmed in time: the lease ends at its deadline, during the pause.
// Depending on the few milliseconds between the deadline and the resume,
// the server either still had the key (it then applies the buffered renewal
// and keeps the key one more TTL for a holder that has given up — safe, it
// costs liveness) or had expired it; in both cases the holder stays lost,
// sends nothing more, and another client acquires within two TTLs.
func TestS07ServerPausedAcrossDeadline(t *testing.T) {
	const ttl = 3 * time.Second // drift 32ms: the window between deadline and server expiry
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	log := &cmdLog{}
	rdb.AddHook(testkit.EachCommand(log.add))
	obs := newObserver()
	a := newClient(t, rdb, core.WithTTL(ttl), core.WithObserver(obs), core.WithOwner("a"))
	hist := faults.NewHistory()
	ctx := testkit.Context(t, 30*time.Second)

	la, err := a.Acquire(ctx, "s07:paused")
	if err != nil {
		t.Fatal(err)
	}
	ha := hist.Begin("a", la)
	recv(t, obs.renewed, 2*ttl, "a confirmed renewal")
	srv.Pause()
	deadline := la.Until()
	select {
	case <-la.Done():
	case <-time.After(2 * ttl):
		srv.Resume()
		t.Fatal("lease kept while the server is frozen")
	}
	lostAt := time.Now()
	srv.Resume()
	resumedAt := time.Now()
	ha.Close()
	if lostAt.Sub(deadline) > 300*time.Millisecond {
		t.Errorf("lost %v after its deadline", lostAt.Sub(deadline))
	}
	h, held, _ := newClient(t, srv.NewClient()).Inspect(ctx, la.Key())
	outcome := "the server had expired the key"
	if held && h.Owner == "a" {
		outcome = "the server applied the late renewal: the key stays one more TTL for a holder that gave up"
	}
	afterLoss(t, srv, la, log, lostAt, hist, 2*ttl+2*time.Second)
	t.Logf("lost %v after the deadline, resumed %v after it: %s", lostAt.Sub(deadline).Round(time.Millisecond),
		resumedAt.Sub(deadline).Round(time.Millisecond), outcome)
}
