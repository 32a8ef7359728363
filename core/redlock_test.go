package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// newRedlock returns a Redlock Client over srvs, each node on its own
// go-redis client, closed at cleanup.
func newRedlock(t testing.TB, srvs []*redistest.Server, opts ...core.Option) *core.Client {
	t.Helper()
	nodes := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		nodes[i] = s.NewClient()
	}
	c, err := core.NewRedlock(nodes, opts...)
	if err != nil {
		t.Fatalf("NewRedlock: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedlockMutualExclusion(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	w := newWitness("rl:1")
	ctx := testkit.Context(t, 60*time.Second)
	stopAt := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for ci := range 3 {
		c := newRedlock(t, srvs, core.WithTTL(2*time.Second), core.WithOwner(fmt.Sprint("rl-", ci)))
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 1000 && time.Now().Before(stopAt); i++ {
					l, err := c.Acquire(ctx, "rl:1", core.Wait(20*time.Second))
					if err != nil {
						t.Errorf("acquire: %v", err)
						return
					}
					w.enter("rl:1", l.Token())
					time.Sleep(200 * time.Microsecond)
					w.leave("rl:1")
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if w.overlaps.Load() != 0 || w.backward.Load() != 0 {
		t.Fatalf("overlaps %d, tokens not increasing %d", w.overlaps.Load(), w.backward.Load())
	}
	if w.cycles.Load() < 20 {
		t.Fatalf("only %d cycles", w.cycles.Load())
	}
	t.Logf("%d Redlock cycles across 3 clients on 5 nodes", w.cycles.Load())
}

// A minority of nodes down or hung: locks still work and calls stay
// bounded. A majority down: a clean ErrUnavailable naming the nodes.
func TestRedlockNodeFailures(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	c := newRedlock(t, srvs, core.WithNodeTimeout(200*time.Millisecond))
	other := newRedlock(t, srvs)
	ctx := testkit.Context(t, 30*time.Second)

	srvs[0].Kill()
	srvs[1].Pause()
	defer srvs[1].Resume()
	start := time.Now()
	l, err := c.Acquire(ctx, "rl:2")
	if err != nil {
		t.Fatalf("with 1 node down and 1 hung: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("acquire took %v with a hung node", took)
	}
	// Taken by another on the live majority: NotAcquired, naming the refusing nodes.
	_, err = other.TryAcquire(ctx, "rl:2")
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Nodes == nil || len(na.Nodes.Refused) != 3 {
		t.Fatalf("TryAcquire on a held lock = %v", err)
	}
	for _, s := range srvs[2:] {
		if !strings.Contains(err.Error(), s.Addr()) {
			t.Fatalf("error %q does not name refusing node %s", err, s.Addr())
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with a minority down: %v", err)
	}

	srvs[2].Kill()
	start = time.Now()
	_, err = c.Acquire(ctx, "rl:3", core.Wait(5*time.Second))
	if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("with a majority down = %v, want ErrUnavailable", err)
	}
	var qe *core.QuorumError
	if !errors.As(err, &qe) || len(qe.Failed) != 3 {
		t.Fatalf("error does not name the failed nodes: %v", err)
	}
	if !strings.Contains(err.Error(), srvs[0].Addr()) || !strings.Contains(err.Error(), srvs[2].Addr()) {
		t.Fatalf("error %q does not name the down nodes", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("failing acquire took %v", took)
	}
}

// Renewal needs a majority: losing it loses the lease.
func TestRedlockRenewalNeedsMajority(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	c := newRedlock(t, srvs, core.WithTTL(time.Second))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "rl:4")
	if err != nil {
		t.Fatal(err)
	}
	srvs[0].Kill() // a minority: still held
	first := l.Until()
	testkit.WaitFor(t, 5*time.Second, "a renewal with one node down", func() bool { return l.Until().After(first) })
	if l.Err() != nil {
		t.Fatalf("lost with a minority down: %v", l.Err())
	}
	srvs[1].Kill() // now only one of three
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease survived losing its majority")
	}
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
}

// Fencing under Redlock: a max over per-node tokens alone is not monotonic
// (here one node's counter runs far ahead, then that node is lost), so the
// engine writes each lease's token back to its majority. The next holder's
// majority overlaps it and its token is larger.
func TestRedlockFencingMonotonicAcrossNodeLoss(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	c := newRedlock(t, srvs)
	ctx := testkit.Context(t, 20*time.Second)
	// Node 0's counter is far ahead of the others' clocks.
	ahead := time.Now().UnixMicro() + int64(time.Hour/time.Microsecond)
	if err := srvs[0].Client.HSet(ctx, "lockkit:v1:k:rl:5", "f", ahead).Err(); err != nil {
		t.Fatal(err)
	}
	l1, err := c.Acquire(ctx, "rl:5")
	if err != nil {
		t.Fatal(err)
	}
	if l1.Token() <= ahead {
		t.Fatalf("token %d, want above node 0's %d", l1.Token(), ahead)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	srvs[0].Kill() // the node that knew the big counter is gone
	l2, err := c.Acquire(ctx, "rl:5")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	// Without the write-back, node 1 and 2 would answer with their clock
	// (an hour less) and the token would go backwards.
	if l2.Token() <= l1.Token() {
		t.Fatalf("token went backwards: %d then %d", l1.Token(), l2.Token())
	}
}

func TestRedlockWakeUpByNotification(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	holder := newRedlock(t, srvs)
	rec := newRecorder()
	waiter := newRedlock(t, srvs, core.WithObserver(rec))
	ctx := testkit.Context(t, 15*time.Second)
	l, err := holder.Acquire(ctx, "rl:6")
	if err != nil {
		t.Fatal(err)
	}
	res := startWaiter(ctx, waiter, "rl:6")
	// Every node's confirmation of the waiter's subscription wakes it for
	// one attempt, each in its own time: wait until all three servers have
	// the subscriber and the attempts those wake-ups cause are over (the
	// count stays put between polls), so the window below sees only polls.
	const channel = "lockkit:v1:c:k:rl:6"
	testkit.WaitFor(t, 10*time.Second, "the waiter subscribed on every node", func() bool {
		for _, s := range srvs {
			if m, err := s.Client.PubSubNumSub(ctx, channel).Result(); err != nil || m[channel] != 1 {
				return false
			}
		}
		return true
	})
	// Settled: no new attempt for 300ms (under load a node's confirmation
	// can trail the others' by more than one poll of WaitFor).
	before, changed := -1, time.Now()
	testkit.WaitFor(t, 10*time.Second, "the waiter's attempts to settle", func() bool {
		_, n, _, _ := rec.snapshot()
		if n != before {
			before, changed = n, time.Now()
		}
		return n >= 2 && time.Since(changed) >= 300*time.Millisecond
	})
	time.Sleep(time.Second) // the window in which nothing may happen (an absence has no signal)
	if _, after, _, _ := rec.snapshot(); after != before {
		t.Fatalf("the waiter made %d more attempts while the lock stayed held: it polls", after-before)
	}
	_ = l.Release(ctx)
	r := testkit.Recv(t, res, 10*time.Second, "the waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.l.Release(ctx)
	end := testkit.Recv(t, rec.endCh, 10*time.Second, "the waiter's AcquireEnd")
	// contended, contended once the subscriptions were confirmed, acquired:
	// a few more only if more confirmations arrived in between, never a poll.
	if end.Outcome != core.OutcomeAcquired || end.Attempts > 5 {
		t.Fatalf("outcome %v after %d attempts", end.Outcome, end.Attempts)
	}
}

func TestNewRedlockRejects(t *testing.T) {
	srvs := redistest.StartN(t, 2)
	if _, err := core.NewRedlock(nil); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("no nodes = %v", err)
	}
	a := srvs[0].NewClient()
	if _, err := core.NewRedlock([]*redis.Client{a, nil}); !errors.Is(err, core.ErrBadRedisClient) || !strings.Contains(err.Error(), "node 1") {
		t.Fatalf("nil node = %v", err)
	}
	if _, err := core.NewRedlock([]*redis.Client{a, srvs[0].NewClient()}); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("same node twice = %v", err)
	}
	bad := redis.NewClient(&redis.Options{Addr: srvs[1].Addr()})
	defer bad.Close()
	if _, err := core.NewRedlock([]*redis.Client{a, bad}); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("node without ContextTimeoutEnabled = %v", err)
	}
	if _, err := core.NewRedlock([]*redis.Client{a}, core.WithReplicaAck(1, time.Second)); !errors.Is(err, core.ErrInvalidOption) {
		t.Fatalf("Redlock with WithReplicaAck = %v", err)
	}
}

// WithReplicaAck: with the replica acknowledging, acquire works; with the
// replica frozen, the acquire fails (and leaves nothing behind) and a held
// lease's renewals stay unconfirmed until it is lost.
func TestReplicaAck(t *testing.T) {
	primary := redistest.Start(t)
	replica := startAckingReplica(t, primary)
	ctx := testkit.Context(t, 30*time.Second)
	c := newClient(t, primary, core.WithReplicaAck(1, 300*time.Millisecond), core.WithTTL(time.Second))
	l, err := c.Acquire(ctx, "ack:1")
	if err != nil {
		t.Fatalf("acquire with an acknowledging replica: %v", err)
	}
	replica.Pause()
	defer replica.Resume()
	_, err = c.Acquire(ctx, "ack:2")
	if !errors.Is(err, core.ErrUnavailable) || !errors.Is(err, core.ErrReplicaAck) {
		t.Fatalf("acquire with the replica frozen = %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the unacknowledged lock given back", func() bool {
		_, held, _ := newClient(t, primary).Inspect(ctx, "ack:2")
		return !held
	})
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease kept without acknowledged renewals")
	}
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
}
