package faults_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 2: the acquire reply arrives after the lease's validity (TTL −
// drift) because a proxy delays it. The acquire fails with ErrUnavailable
// ("validity") and the engine gives its token back: the lock hash is left
// released by the owner-checked release script (fields f and r, no o), not
// merely expired, and well before the server's TTL would have freed it.
//
// The command goes up with 900ms of latency (so the server sets the key at
// ~0.9s, expiring at ~1.9s) and the reply comes down with 200ms more: the
// client sees it at ~1.1s > 1s − 12ms. Once the command has passed the
// proxy, upstream latency goes back to 0 so the give-back reaches the
// server while the key still lives.
func TestS02SlowRepliesDuringAcquire(t *testing.T) {
	const key = "s02:slow"
	const ttl = time.Second
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr())
	rdb := via(srv, px.Addr())
	c := newClient(t, rdb, core.WithTTL(ttl))
	ctx := testkit.Context(t, 30*time.Second)
	if err := rdb.Ping(ctx).Err(); err != nil { // open the connection before slowing it
		t.Fatal(err)
	}

	px.SetLatency(tcpproxy.Upstream, 900*time.Millisecond)
	px.SetLatency(tcpproxy.Downstream, 200*time.Millisecond)
	up := px.Stats().Upstream
	type result struct {
		l   *core.Lease
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		l, err := c.TryAcquire(ctx, key)
		done <- result{l, err, time.Now()}
	}()
	testkit.WaitFor(t, 5*time.Second, "the acquire to pass the proxy", func() bool { return px.Stats().Upstream > up })
	px.SetLatency(tcpproxy.Upstream, 0)

	r := recv(t, done, 10*time.Second, "the slow acquire")
	if r.err == nil {
		_ = r.l.Release(ctx)
		t.Fatalf("acquire succeeded %v after sending with a %v TTL", r.at.Sub(start), ttl)
	}
	if !errors.Is(r.err, core.ErrUnavailable) || !strings.Contains(r.err.Error(), "validity") {
		t.Fatalf("acquire = %v, want ErrUnavailable about validity", r.err)
	}
	if took := r.at.Sub(start); took < ttl-ttl/50 {
		t.Fatalf("acquire failed after %v, before the validity could be used up", took)
	}
	// Given back, not expired: the release script left f and r and no o,
	// and the key has fenceKeep (10s) left, more than the lease's TTL.
	testkit.WaitFor(t, 3*time.Second, "the token given back", func() bool {
		h, err := srv.Client.HGetAll(ctx, lockKey(key)).Result()
		return err == nil && h["o"] == "" && h["r"] != "" && h["f"] != ""
	})
	if pttl := srv.Client.PTTL(ctx, lockKey(key)).Val(); pttl <= ttl {
		t.Fatalf("released hash PTTL %v: it expired rather than being released", pttl)
	}
	gaveBackAfter := time.Since(start)
	if gaveBackAfter > 1900*time.Millisecond {
		t.Logf("note: give-back seen %v after the send, after the server's expiry would have freed it", gaveBackAfter)
	}
	noLeftovers(t, 5*time.Second, srv.Client)

	// Healed: the same Client acquires (no local hold was counted).
	px.SetLatency(tcpproxy.Downstream, 0)
	l, err := c.Acquire(ctx, key, core.NoWait())
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	_ = l.Release(ctx)
	t.Logf("acquire failed %v after sending: %v", r.at.Sub(start).Round(time.Millisecond), r.err)
}

// The same under Redlock: two of three nodes answer later than the node
// timeout (itself ≤ TTL/10, far below the validity): no majority, a clean
// ErrUnavailable naming the slow nodes, bounded in time, and nothing left
// behind on any node once the slow replies are in.
func TestS02SlowNodesRedlock(t *testing.T) {
	const key = "s02:redlock"
	srvs := redistest.StartN(t, 3)
	var rdbs []*redis.Client
	var pxs []*tcpproxy.Proxy
	for _, s := range srvs {
		px := newProxy(t, s.Addr())
		pxs = append(pxs, px)
		rdbs = append(rdbs, via(s, px.Addr()))
	}
	c := newRedlock(t, rdbs, core.WithTTL(3*time.Second), core.WithNodeTimeout(300*time.Millisecond))
	ctx := testkit.Context(t, 30*time.Second)
	for _, px := range pxs[1:] {
		px.SetLatency(tcpproxy.Downstream, time.Second)
	}
	start := time.Now()
	_, slowErr := c.Acquire(ctx, key, core.Wait(5*time.Second))
	took := time.Since(start)
	var qe *core.QuorumError
	if !errors.Is(slowErr, core.ErrUnavailable) || errors.Is(slowErr, core.ErrNotAcquired) || !errors.As(slowErr, &qe) || len(qe.Failed) != 2 {
		t.Fatalf("acquire with 2 of 3 nodes slow = %v", slowErr)
	}
	for _, px := range pxs[1:] { // nodes are named by the address their client dials
		if !strings.Contains(slowErr.Error(), px.Addr()) {
			t.Fatalf("error %q does not name the slow node %s", slowErr, px.Addr())
		}
	}
	if took > 2*time.Second {
		t.Fatalf("failing acquire took %v with a 300ms node timeout", took)
	}
	// The slow nodes did apply the acquire; the give-back (sent to all nodes)
	// reached them too, so nothing stays owned anywhere.
	noLeftovers(t, 5*time.Second, srvs[0].Client, srvs[1].Client, srvs[2].Client)
	for _, px := range pxs {
		px.SetLatency(tcpproxy.Downstream, 0)
	}
	l, err := c.Acquire(ctx, key, core.Wait(5*time.Second))
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	_ = l.Release(ctx)
	t.Logf("Redlock acquire failed in %v: %v", took.Round(time.Millisecond), slowErr)
}
