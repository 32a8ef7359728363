package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// releasedByOwner reports whether key's hash shows an owner-checked release
// (f and r kept, no o) rather than an expiry (no hash) or a holder (o).
func releasedByOwner(ctx context.Context, rdb redis.Cmdable, key string) bool {
	h, err := rdb.HGetAll(ctx, lockKey(key)).Result()
	return err == nil && h["o"] == "" && h["r"] != "" && h["f"] != ""
}

// warmScripts runs one acquire and release so the servers have the scripts
// cached, as a running service's servers do. On a cold cache the first
// EVALSHA is refused with NOSCRIPT and applies nothing; with that reply
// lost, there is nothing to give back (the test would show nothing).
func warmScripts(t *testing.T, ctx context.Context, c *core.Client, key string) {
	t.Helper()
	l, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Scenario 8: the server applies a command and its reply is lost (the proxy
// discards server→client bytes), then the network heals.
//
// The heal matters: while replies keep being lost, the give-back cannot get
// through either (each new connection's handshake reply is lost too), and
// the lock then lives until its TTL.
//
//   - Acquire: the caller's ctx ends without a reply, though the server
//     granted the lock. The engine gives its token back at once: the lock is
//     free within the release timeout (1s), not after the TTL (10s). No hold
//     is counted anywhere: the same Client can acquire with NoWait (its local
//     queue is empty), the Observer saw no lease.
//   - Release: the script ran, the reply is lost: Release reports
//     ErrUnavailable after the release timeout, the lock is free on the
//     server, and locally the lease is over (NoWait acquires again).
func TestS08RepliesLost(t *testing.T) {
	const key = "s08:lost"
	const ttl = 10 * time.Second
	const relTimeout = time.Second
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr())
	obs := newObserver()
	a := newClient(t, via(srv, px.Addr()), core.WithTTL(ttl), core.WithReleaseTimeout(relTimeout), core.WithObserver(obs))
	other := newClient(t, srv.NewClient())
	ctx := testkit.Context(t, 60*time.Second)
	warmScripts(t, ctx, a, key)

	t.Run("acquire", func(t *testing.T) {
		px.DropReplies(true)
		dropped := px.Stats().Dropped
		actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := a.Acquire(actx, key)
			done <- err
		}()
		// The server answered (it applied the acquire) and the answer was
		// dropped; the network heals while the caller still waits for it.
		testkit.WaitFor(t, 5*time.Second, "the acquire's reply dropped", func() bool { return px.Stats().Dropped > dropped })
		px.DropReplies(false)
		err := recv(t, done, 5*time.Second, "the acquire")
		cancel()
		failedAt := time.Now()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire with its reply lost = %v, want the ctx's DeadlineExceeded", err)
		}
		testkit.WaitFor(t, relTimeout+2*time.Second, "the granted lock given back", func() bool {
			return releasedByOwner(ctx, srv.Client, key)
		})
		if d := time.Since(failedAt); d > relTimeout+time.Second {
			t.Errorf("given back %v after the failed acquire", d)
		}
		if pttl := srv.Client.PTTL(ctx, lockKey(key)).Val(); pttl > ttl {
			t.Errorf("released hash PTTL %v", pttl)
		}
		// Another client can take it now.
		lo, err := other.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("other client after the give-back: %v", err)
		}
		_ = lo.Release(ctx)
		// No hold counted: NoWait refuses when this Client holds or queues.
		l, err := a.Acquire(ctx, key, core.NoWait())
		if err != nil {
			t.Fatalf("the same Client after the ambiguous acquire: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		c := obs.counts()
		if c.ends != 3 || c.lost != 0 || c.released != 2 {
			t.Errorf("observer %+v: want 3 acquire ends, 2 releases (one the warm-up), no loss", c)
		}
		if obs.ends[1].Outcome == core.OutcomeAcquired {
			t.Errorf("the ambiguous acquire was reported as acquired")
		}
	})

	t.Run("release", func(t *testing.T) {
		l, err := a.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		px.DropReplies(true)
		start := time.Now()
		err = l.Release(context.Background()) // no deadline: the release timeout bounds it
		if err == nil {
			t.Fatal("release with its reply lost reported success")
		}
		// Which error: see TestS08BoundedCallErrorClass.
		if d := time.Since(start); d > relTimeout+time.Second {
			t.Errorf("release took %v (timeout %v)", d, relTimeout)
		}
		if !releasedByOwner(ctx, srv.Client, key) {
			t.Fatal("the release was not applied on the server")
		}
		if l.Context().Err() == nil {
			t.Fatal("lease context alive after Release")
		}
		px.DropReplies(false)
		l2, err := a.Acquire(ctx, key, core.NoWait())
		if err != nil {
			t.Fatalf("the same Client after a release whose reply was lost: %v", err)
		}
		_ = l2.Release(ctx)
	})
	noLeftovers(t, 5*time.Second, srv.Client)
}

// The engine bounds Release and Extend by the release timeout when the
// caller's ctx has no deadline; when that internal bound fires, the error
// must say Redis did not answer (ErrUnavailable, as Lease.Release documents),
// not that the caller's context ended: the caller's context is Background.
func TestS08BoundedCallErrorClass(t *testing.T) {
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr())
	c := newClient(t, via(srv, px.Addr()), core.WithReleaseTimeout(500*time.Millisecond))
	ctx := testkit.Context(t, 30*time.Second)
	warmScripts(t, ctx, c, "s08:class")
	for _, op := range []string{"release", "extend"} {
		l, err := c.Acquire(ctx, "s08:class:"+op)
		if err != nil {
			t.Fatal(err)
		}
		px.DropReplies(true)
		if op == "release" {
			err = l.Release(context.Background())
		} else {
			err = l.Extend(context.Background(), time.Minute)
		}
		px.DropReplies(false)
		if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with no caller deadline and no reply = %v, want ErrUnavailable", op, err)
		}
		_ = l.Release(ctx)
	}
}

// Scenario 8, Redlock: replies lost on two of three nodes during acquire
// (then the network heals).
// No majority confirmed, so the acquire fails (ErrUnavailable naming the
// nodes) and the give-back goes to every node, also those whose reply was
// lost: nothing stays owned anywhere, well before the TTL.
func TestS08RepliesLostRedlock(t *testing.T) {
	const key = "s08:redlock"
	const ttl = 10 * time.Second
	srvs := redistest.StartN(t, 3)
	var rdbs []*redis.Client
	var pxs []*tcpproxy.Proxy
	for _, s := range srvs {
		px := newProxy(t, s.Addr())
		pxs = append(pxs, px)
		rdbs = append(rdbs, via(s, px.Addr()))
	}
	c := newRedlock(t, rdbs, core.WithTTL(ttl), core.WithNodeTimeout(300*time.Millisecond))
	ctx := testkit.Context(t, 30*time.Second)
	warmScripts(t, ctx, c, key)
	var before []int64
	for _, px := range pxs[1:] {
		before = append(before, px.Stats().Dropped)
		px.DropReplies(true)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.TryAcquire(ctx, key)
		done <- err
	}()
	for i, px := range pxs[1:] {
		testkit.WaitFor(t, 5*time.Second, "the reply dropped", func() bool { return px.Stats().Dropped > before[i] })
		px.DropReplies(false)
	}
	err := recv(t, done, 5*time.Second, "the acquire")
	var qe *core.QuorumError
	if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &qe) || len(qe.Failed) != 2 {
		t.Fatalf("acquire with 2 of 3 replies lost = %v", err)
	}
	failedAt := time.Now()
	for _, s := range srvs {
		testkit.WaitFor(t, 3*time.Second, "the give-back on node "+s.Addr(), func() bool {
			return releasedByOwner(ctx, s.Client, key)
		})
	}
	if d := time.Since(failedAt); d > 2*time.Second {
		t.Errorf("given back %v after the failure (TTL %v)", d, ttl)
	}
	l, err := c.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	_ = l.Release(ctx)
	noLeftovers(t, 5*time.Second, allClients(srvs)...)
}
