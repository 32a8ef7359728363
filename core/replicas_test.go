package core_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Several replicas (each its own Client, as separate processes) loop on one
// key. Witnesses: an overlap counter and the fencing tokens, which must rise
// in the order the critical sections ran. Fairness is asserted as
// structure, not timing: while a replica has callers waiting, the others
// get a bounded number of turns before it is served again. With the wait
// queue in Redis a process's turn is at most one cycle per local caller, so
// a replica waits for at most (replicas-1)·workers cycles of the others
// once it is queued there; the bound below doubles that for the cycles
// before its head queues. A random race for every public release (and runs
// of 16 local hand-offs) breaks it routinely.
func TestReplicasShareOneLock(t *testing.T) {
	const replicas, workers, cycles = 4, 3, 1200
	srv := redistest.Start(t)
	clients := make([]*core.Client, replicas)
	for i := range clients {
		clients[i] = newClient(t, srv)
	}
	ctx := testkit.Context(t, 60*time.Second)
	var (
		inside  atomic.Int32
		overlap atomic.Int32
		next    atomic.Int64
		mu      sync.Mutex
		order   []int   // replica of each critical section, in the order they ran
		tokens  []int64 // fencing token of each
		wg      sync.WaitGroup
	)
	for r := range replicas {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= cycles {
					l, err := clients[r].Acquire(ctx, "replicas")
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlap.Add(1)
					}
					mu.Lock()
					order = append(order, r)
					tokens = append(tokens, l.Token())
					mu.Unlock()
					time.Sleep(100 * time.Microsecond) // the work under the lock
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := overlap.Load(); n > 0 {
		t.Fatalf("%d overlapping holders", n)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("cycle %d: token %d not above the previous holder's %d", i, tokens[i], tokens[i-1])
		}
	}
	// The longest run of cycles by others between two cycles of a replica
	// (every replica always has callers waiting: its workers loop).
	bound := 2 * (replicas - 1) * workers
	served := make([]int, replicas)
	last := make([]int, replicas)
	for i := range last {
		last[i] = -1
	}
	worst, worstAt := 0, 0
	for i, r := range order {
		served[r]++
		if gap := i - last[r] - 1; gap > worst && last[r] >= 0 {
			worst, worstAt = gap, i
		}
		last[r] = i
	}
	t.Logf("cycles per replica %v; longest wait of a replica: %d cycles of others (bound %d)", served, worst, bound)
	if worst > bound {
		t.Fatalf("a replica waited %d cycles of others (at cycle %d), bound %d: %v", worst, worstAt, bound, served)
	}
}

// waitQueued blocks until the acquire reporting to rec made n contended
// attempts: after two, its head is queued in Redis and subscribed.
func waitQueued(t *testing.T, rec *recorder, n int) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "contended attempts", func() bool {
		_, contended, _, _ := rec.snapshot()
		return contended >= n
	})
}

// A grantee that stopped (its connection hung, as a paused process's) does
// not strand the lock for a lease TTL (30s here): its grant lasts the grant
// TTL (2s), and the next waiter takes the lock after it. Then the grantee,
// thawed, gets the lock in its turn.
func TestDeadGranteeDoesNotStrandLock(t *testing.T) {
	srv := redistest.Start(t)
	prx, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer prx.Close()
	holder := newClient(t, srv)
	grec := newRecorder()
	grantee := newClientOn(t, redis.NewClient(&redis.Options{Addr: prx.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true}), core.WithObserver(grec))
	nrec := newRecorder()
	next := newClient(t, srv, core.WithObserver(nrec))
	ctx := testkit.Context(t, 30*time.Second)

	l, err := holder.Acquire(ctx, "dead")
	if err != nil {
		t.Fatal(err)
	}
	gres := startWaiter(ctx, grantee, "dead")
	waitQueued(t, grec, 2)
	nres := startWaiter(ctx, next, "dead")
	waitQueued(t, nrec, 2)
	prx.Pause() // the grantee hangs
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h, held, err := holder.Inspect(ctx, "dead")
	if err != nil || !held || h.TTL > 2*time.Second {
		t.Fatalf("after the release: %+v held %v (%v), want a grant of at most 2s", h, held, err)
	}
	start := time.Now()
	r := testkit.Recv(t, nres, 20*time.Second, "the next waiter")
	if r.err != nil {
		t.Fatalf("next waiter: %v", r.err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the lock stayed stranded %v", waited)
	}
	if r.l.Token() <= h.Token {
		t.Fatalf("token %d not above the grant's %d", r.l.Token(), h.Token)
	}
	prx.Resume()
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := testkit.Recv(t, gres, 20*time.Second, "the thawed grantee")
	if g.err != nil {
		t.Fatalf("grantee: %v", g.err)
	}
	if g.l.Token() <= r.l.Token() {
		t.Fatalf("token %d not above the previous holder's %d", g.l.Token(), r.l.Token())
	}
	_ = g.l.Release(ctx)
}

// A waiter whose caller gives up after its queue was granted the lock (but
// before it confirmed) gives the grant back: the next waiter gets the lock
// by the release message of that give-back, not by the grant's expiry.
// Attempts of the next waiter: refused, refused after subscribing, refused
// on the holder's release (granted to the first), then the winning one,
// woken by the give-back. Its periodic retry (1.5s) would come earlier than
// the grant's end (2s), so an expiry shows as a fifth attempt.
func TestWaiterGivesBackGrant(t *testing.T) {
	srv := redistest.Start(t)
	prx, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer prx.Close()
	holder := newClient(t, srv)
	grec := newRecorder()
	quitter := newClientOn(t, redis.NewClient(&redis.Options{Addr: prx.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true}), core.WithObserver(grec), core.WithOwner("quitter"))
	nrec := newRecorder()
	next := newClient(t, srv, core.WithObserver(nrec))
	ctx := testkit.Context(t, 30*time.Second)

	l, err := holder.Acquire(ctx, "quit")
	if err != nil {
		t.Fatal(err)
	}
	qctx, quit := context.WithCancel(ctx)
	qres := startWaiter(qctx, quitter, "quit")
	waitQueued(t, grec, 2)
	nres := startWaiter(ctx, next, "quit")
	waitQueued(t, nrec, 2)
	prx.Pause() // the grant's message and the quitter's confirmation stall
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the grant to the quitter", func() bool {
		h, held, err := next.Inspect(ctx, "quit")
		return err == nil && held && h.Owner == "quitter" && h.Token > l.Token() // granted (the grant names the grantee), unconfirmed
	})
	quit()
	start := time.Now()
	if q := testkit.Recv(t, qres, 10*time.Second, "the quitter"); !errors.Is(q.err, context.Canceled) {
		t.Fatalf("quitter: %v, want context.Canceled", q.err)
	}
	prx.Resume() // its give-back goes out now
	r := testkit.Recv(t, nres, 20*time.Second, "the next waiter")
	if r.err != nil {
		t.Fatalf("next waiter: %v", r.err)
	}
	defer r.l.Release(ctx)
	end := testkit.Recv(t, nrec.endCh, 10*time.Second, "the next waiter's AcquireEnd")
	// Two attempts to queue, one woken by the give-back's grant; a grant to
	// the quitter wakes nobody else. More only if a refresh period passed.
	if end.Attempts < 3 || end.Attempts > 3+refreshes(start) {
		t.Fatalf("the next waiter acquired after %d attempts, want 3 (woken by the give-back)", end.Attempts)
	}
}

// refreshes bounds the periodic attempts a queued head made since start
// (one per queue refresh period, 1.5 s with the default TTL).
func refreshes(start time.Time) int { return int(time.Since(start) / (1500 * time.Millisecond)) }

// A release that grants the lock names the grantee in its message: only the
// grantee's process wakes. Three processes: A holds, B and C queue in that
// order; A's release grants B, and C does not attempt until B's release
// grants it: C acquires on its third attempt (two to queue, one to
// confirm), where a message waking every queued head gives it a fourth.
func TestGrantWakesOnlyTheGrantee(t *testing.T) {
	srv := redistest.Start(t)
	a := newClient(t, srv)
	brec, crec := newRecorder(), newRecorder()
	b := newClient(t, srv, core.WithObserver(brec))
	c := newClient(t, srv, core.WithObserver(crec))
	ctx := testkit.Context(t, 30*time.Second)
	la, err := a.Acquire(ctx, "grant")
	if err != nil {
		t.Fatal(err)
	}
	bres := startWaiter(ctx, b, "grant")
	waitQueued(t, brec, 2)
	cres := startWaiter(ctx, c, "grant")
	waitQueued(t, crec, 2)
	start := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rb := testkit.Recv(t, bres, 10*time.Second, "B")
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	if err := rb.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rc := testkit.Recv(t, cres, 10*time.Second, "C")
	if rc.err != nil {
		t.Fatal(rc.err)
	}
	defer rc.l.Release(ctx)
	if rc.l.Token() <= rb.l.Token() {
		t.Fatalf("C's token %d after B's %d", rc.l.Token(), rb.l.Token())
	}
	end := testkit.Recv(t, crec.endCh, 10*time.Second, "C's AcquireEnd")
	if end.Attempts < 3 || end.Attempts > 3+refreshes(start) {
		t.Fatalf("C acquired after %d attempts, want 3: woken by the grant to B", end.Attempts)
	}
}

// After floods of contended acquires by several Clients, no lock hash keeps
// a wait-queue field: entries leave with their grants, their give-backs or
// the releases that skip them.
func TestWaitQueueLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	clients := make([]*core.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, srv)
	}
	const keys, perClient = 40, 4
	var wg sync.WaitGroup
	for i, c := range clients {
		for w := range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range keys {
					key := "flood:" + string(rune('a'+k%26)) + string(rune('a'+k/26))
					wctx, cancel := context.WithCancel(ctx)
					if (i+w+k)%5 == 0 {
						cancel() // some callers give up at once
					}
					l, err := c.Acquire(wctx, key, core.Wait(5*time.Second))
					cancel()
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							t.Error(err)
						}
						continue
					}
					_ = l.Release(ctx)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range clients {
		testkit.WaitFor(t, 10*time.Second, "local queues gone", func() bool {
			for k := range keys {
				if core.Queued(c, "flood:"+string(rune('a'+k%26))+string(rune('a'+k/26))) != 0 {
					return false
				}
			}
			return true
		})
	}
	// Give-backs run in the background: wait for every hash to be clean.
	testkit.WaitFor(t, 10*time.Second, "no wait-queue fields", func() bool {
		hashes, err := srv.Client.Keys(ctx, "lockkit:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range hashes {
			fields, _ := srv.Client.HGetAll(ctx, k).Result()
			for f, v := range fields {
				if (f == "o" && v != "") || strings.HasPrefix(f, "q") || strings.HasPrefix(f, "i") {
					t.Logf("%s keeps %q", k, f)
					return false
				}
			}
		}
		return true
	})
}
