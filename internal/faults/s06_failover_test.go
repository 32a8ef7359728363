package faults_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
)

// replicated is a primary with one replica, and the address clients use (a
// proxy standing for a virtual IP or a sentinel-resolved name).
//
// The replica replicates through its own proxy (link): freezing the replica
// process (SIGSTOP) is not enough to keep a write from it, because the
// primary's stream lands in the frozen replica's socket buffer and is
// applied on SIGCONT (we checked: the key is there after promotion). Pausing
// the link and cutting it when the primary dies loses the stream for good,
// which is what an asynchronous replica that lagged looks like.
type replicated struct {
	primary, replica *redistest.Server
	link, vip        *tcpproxy.Proxy
}

func startReplicated(t *testing.T) *replicated {
	t.Helper()
	p := &replicated{primary: redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0"))}
	p.link = newProxy(t, p.primary.Addr())
	_, port, _ := strings.Cut(p.link.Addr(), ":")
	p.replica = redistest.Start(t, redistest.WithArgs("--replicaof", "127.0.0.1", port))
	ctx := testkit.Context(t, 30*time.Second)
	testkit.WaitFor(t, 20*time.Second, "the replica in sync", func() bool {
		info, _ := p.replica.Client.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	// After a diskless sync the primary streams writes only once the
	// replica's first REPLCONF ACK arrived (sent by its once-a-second cron):
	// wait until a write is acknowledged, or WAIT would time out at first.
	testkit.WaitFor(t, 20*time.Second, "the replica acknowledging writes", func() bool {
		pipe := p.primary.Client.Pipeline()
		pipe.Set(ctx, "replication:probe", "1", time.Second)
		n := pipe.Do(ctx, "wait", 1, 200)
		_, _ = pipe.Exec(ctx)
		v, err := n.Int()
		return err == nil && v == 1
	})
	p.vip = newProxy(t, p.primary.Addr())
	return p
}

// isolate: from now on the replica receives nothing from the primary.
func (p *replicated) isolate() { p.link.Pause() }

// failover kills the primary, drops what the link held, promotes the
// replica and points the clients' address at it.
func (p *replicated) failover(t *testing.T) {
	t.Helper()
	p.primary.Kill()
	p.link.CutAll()
	_ = p.link.Close()
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.replica.Client.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the replica promoted", func() bool {
		info, _ := p.replica.Client.Info(ctx, "replication").Result()
		return strings.Contains(info, "role:master")
	})
	p.vip.SetTarget(p.replica.Addr())
	p.vip.CutAll()
}

// Scenario 6: failover to a replica that never got the lock.
//
//   - Without WAIT: the acquire succeeds on the primary, the primary dies,
//     the promoted replica has no lock, and a second client takes it while
//     the first still believes (until its next renewal finds the other
//     owner). The checker catches the believed-hold overlap; the fenced
//     resource rejects the first holder's write (here the second token is
//     larger because both servers share one clock: fencing across a
//     failover holds only as far as the new primary's TIME is ahead).
//   - With core.WithReplicaAck(1, 300ms): the same acquire fails
//     (ErrUnavailable wrapping ErrReplicaAck) and is given back, so nobody
//     believes in a lock the replica lacks: no overlap.
//   - With WithReplicaAck and the replica in sync: the lock survives the
//     failover (a second client is refused). The promoted primary has no
//     replica of its own, so the holder's renewals are unconfirmed and its
//     lease ends at its deadline (fail-closed), still without overlap.
func TestS06FailoverToLaggingReplica(t *testing.T) {
	const key = "s06:failover"

	t.Run("without WAIT", func(t *testing.T) {
		const ttl = 6 * time.Second // next renewal 2s after the acquire: room for the failover
		p := startReplicated(t)
		hist, res := faults.NewHistory(), faults.NewResource()
		a := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("a"))
		b := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("b"))
		ctx := testkit.Context(t, 60*time.Second)

		p.isolate()
		la, err := a.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		ha := hist.Begin("a", la)
		snap := res.Read(key)
		p.failover(t)
		lb, err := b.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("B on the promoted replica: %v", err)
		}
		if la.Err() != nil {
			t.Fatalf("precondition: A noticed the failover (%v) before B acquired", la.Err())
		}
		hb := hist.Begin("b", lb)
		if err := res.Increment(key, lb.Token(), 0); err != nil {
			t.Fatalf("B's write: %v", err)
		}
		werr := res.Write(key, la.Token(), snap, snap.Value+1)
		if !errors.Is(werr, faults.ErrStaleToken) {
			t.Errorf("A's write after the failover = %v, want a stale-token rejection", werr)
		}
		select {
		case <-la.Done():
		case <-time.After(2 * ttl):
			t.Fatal("A never noticed it lost the lock")
		}
		ha.Close()
		if !isLost(la) {
			t.Errorf("A's cause %v", context.Cause(la.Context()))
		}
		hb.Released()
		_ = lb.Release(ctx)
		verdict(t, hist, res, true)
		noLeftovers(t, 5*time.Second, p.replica.Client)
	})

	t.Run("WithReplicaAck, replica lagging", func(t *testing.T) {
		const ttl = 3 * time.Second
		p := startReplicated(t)
		hist, res := faults.NewHistory(), faults.NewResource()
		a := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("a"),
			core.WithReplicaAck(1, 300*time.Millisecond))
		b := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("b"))
		ctx := testkit.Context(t, 60*time.Second)

		p.isolate()
		_, err := a.Acquire(ctx, key)
		if !errors.Is(err, core.ErrUnavailable) || !errors.Is(err, core.ErrReplicaAck) {
			t.Fatalf("acquire with the replica cut off = %v, want ErrUnavailable wrapping ErrReplicaAck", err)
		}
		// Given back on the primary, not left for its TTL.
		testkit.WaitFor(t, 5*time.Second, "the unacknowledged lock given back", func() bool {
			return p.primary.Client.HGet(ctx, lockKey(key), "o").Val() == ""
		})
		p.failover(t)
		lb, err := b.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("B on the promoted replica: %v", err)
		}
		hb := hist.Begin("b", lb)
		if err := res.Increment(key, lb.Token(), 0); err != nil {
			t.Fatal(err)
		}
		hb.Released()
		_ = lb.Release(ctx)
		verdict(t, hist, res, false)
		noLeftovers(t, 5*time.Second, p.replica.Client)
	})

	t.Run("WithReplicaAck, replica in sync", func(t *testing.T) {
		const ttl = 3 * time.Second
		p := startReplicated(t)
		hist, res := faults.NewHistory(), faults.NewResource()
		a := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("a"),
			core.WithReplicaAck(1, 300*time.Millisecond))
		b := newClient(t, via(p.primary, p.vip.Addr()), core.WithTTL(ttl), core.WithOwner("b"))
		ctx := testkit.Context(t, 60*time.Second)

		la, err := a.Acquire(ctx, key)
		if err != nil {
			t.Fatalf("acquire with an acknowledging replica: %v", err)
		}
		ha := hist.Begin("a", la)
		if err := res.Increment(key, la.Token(), 0); err != nil {
			t.Fatal(err)
		}
		p.failover(t)
		_, err = b.TryAcquire(ctx, key)
		var na *core.NotAcquiredError
		if !errors.As(err, &na) || na.Holder.Owner != "a" {
			t.Fatalf("B after the failover = %v, want held by a (the lock was replicated)", err)
		}
		// A's renewals now get no acknowledgement (the new primary has no
		// replica): its lease ends at its deadline.
		select {
		case <-la.Done():
		case <-time.After(2 * ttl):
			t.Fatal("A's lease outlived its unacknowledged renewals")
		}
		ha.Close()
		if !isLost(la) {
			t.Errorf("A's cause %v", context.Cause(la.Context()))
		}
		live := faults.NewLiveness("b")
		live.Healed()
		lb, err := b.Acquire(ctx, key, core.Wait(3*ttl))
		if err != nil {
			t.Fatalf("B after A's lease ended: %v", err)
		}
		live.Acquired("b")
		hb := hist.Begin("b", lb)
		if err := res.Increment(key, lb.Token(), 0); err != nil {
			t.Fatal(err)
		}
		hb.Released()
		_ = lb.Release(ctx)
		verdict(t, hist, res, false)
		// The unacknowledged renewals still reset the TTL on the new primary
		// (WAIT does not undo a write): B waits up to one TTL past A's deadline.
		if err := live.Check(2*ttl + 2*time.Second); err != nil {
			t.Error(err)
		}
		noLeftovers(t, 5*time.Second, p.replica.Client)
		t.Logf("B acquired %v after A's lease ended; tokens %d then %d", live.Latest().Round(time.Millisecond), la.Token(), lb.Token())
	})
}
