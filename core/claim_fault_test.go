package core_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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

// proxied returns a Client whose every connection to srv goes through a
// tcpproxy the test can freeze (a stalled owner), and the proxy.
func proxied(t *testing.T, srv *redistest.Server, opts ...core.Option) (*core.Client, *tcpproxy.Proxy) {
	t.Helper()
	p, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	rdb := srv.NewClient(func(o *redis.Options) { o.Addr = p.Addr() })
	return newClientOn(t, rdb, opts...), p
}

// A claim is renewed while its owner works: it outlives many TTLs, and
// a retry meanwhile finds it in progress.
func TestClaimRenewed(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	const ttl = 200 * time.Millisecond
	cl := mustClaim(t, ctx, c, "k", core.ClaimRequest{TTL: ttl})
	testkit.WaitFor(t, 10*time.Second, "6 confirmed renewals (two TTLs)", func() bool {
		_, _, renewed, _ := rec.snapshot()
		return renewed >= 6
	})
	if _, err := c.Claim(ctx, "k", core.ClaimRequest{}); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("claim of a renewed claim: %v, want ErrNotAcquired", err)
	}
	if err := cl.Lease.Complete(ctx, []byte("done")); err != nil {
		t.Fatal(err)
	}
}

// The owner's process killed mid-work (SIGKILL: no release, no
// renewal): the record stays in progress until the claim's TTL, not the
// retention; then the next claim takes it over, says so, and gets a
// larger token.
func TestClaimOwnerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	srv := redistest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Second
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=claim", "LOCK_ADDR="+srv.Addr(), "TTL="+ttl.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %v", err)
	}
	crashed, _ := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()

	c := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	req := core.ClaimRequest{Fingerprint: "pay", Wait: 10 * time.Second}
	cl, err := c.Claim(ctx, "pay:9", req)
	if err != nil {
		t.Fatalf("claim after the owner died: %v", err)
	}
	if !cl.TakenOver || cl.Token <= crashed || cl.Lease == nil {
		t.Fatalf("claim %+v after the killed owner's token %d: want taken over, a larger token", cl, crashed)
	}
	if took := time.Since(killed); took > ttl+5*time.Second {
		t.Errorf("taken over %v after the kill, want about the TTL (%v)", took, ttl)
	}
	defer cl.Lease.Release(ctx)
	if _, err := c.Claim(ctx, "pay:9", core.ClaimRequest{Fingerprint: "other"}); !errors.Is(err, core.ErrFingerprint) {
		t.Errorf("another request under the key after the takeover: %v, want ErrFingerprint", err)
	}
}

// claimChild is the child side of TestClaimOwnerKilled: it claims, prints
// its token, and works forever.
func claimChild() error {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LOCK_ADDR"), ContextTimeoutEnabled: true, MaxRetries: -1})
	ttl, _ := time.ParseDuration(os.Getenv("TTL"))
	c, err := core.New(rdb, core.WithOwner("child"))
	if err != nil {
		return err
	}
	cl, err := c.Claim(context.Background(), "pay:9", core.ClaimRequest{Fingerprint: "pay", TTL: ttl})
	if err != nil {
		return err
	}
	fmt.Println(cl.Token)
	select {}
}

// An owner stalled past its claim (its connection frozen) while the
// claim was taken over cannot store its answer over the new owner's: its
// completion, sent while its lease looked held and delivered after the
// takeover, is refused by the fence and the stored answer stays the new
// owner's (read back with a plain Redis client).
func TestClaimStalledOwnerCannotComplete(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 500 * time.Millisecond
	slow, proxy := proxied(t, srv, core.WithOwner("slow"), core.WithReleaseTimeout(20*time.Second))
	fresh := newClient(t, srv, core.WithOwner("fresh"))
	ctx := testkit.Context(t, 30*time.Second)
	req := core.ClaimRequest{Fingerprint: "f", TTL: ttl}

	old := mustClaim(t, ctx, slow, "k", req)
	proxy.Pause()
	done := make(chan error, 1)
	go func() { done <- old.Lease.Complete(ctx, []byte("stale")) }()
	var next core.Claim
	testkit.WaitFor(t, 10*time.Second, "the stalled claim taken over", func() bool {
		cl, err := fresh.Claim(ctx, "k", req)
		if err == nil {
			next = cl
			return true
		}
		if !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("claim: %v", err)
		}
		return false
	})
	if !next.TakenOver || next.Token <= old.Token {
		t.Fatalf("takeover %+v after token %d: want taken over with a larger token", next, old.Token)
	}
	if err := next.Lease.Complete(ctx, []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	proxy.Resume()
	err := testkit.Recv(t, done, 25*time.Second, "the stalled Complete")
	if !errors.Is(err, core.ErrNotHeld) || !errors.Is(err, core.ErrLost) {
		t.Fatalf("stalled owner's Complete: %v, want ErrNotHeld and ErrLost", err)
	}
	if v := srv.Client.HGet(ctx, recordKey("k"), "d").Val(); v != "fresh" {
		t.Fatalf("stored answer %q, want the new owner's", v)
	}
	if v, _ := srv.Client.HGet(ctx, recordKey("k"), "f").Int64(); v != next.Token {
		t.Errorf("record's token %d, want the new owner's %d", v, next.Token)
	}
}

// Concurrent duplicates (a hedging client, retries reaching several
// replicas at once) run the work once: exactly one caller claims, the
// others find it in progress or, once completed, replay its answer. The
// witness is a counter kept outside the engine, and an overlap gauge.
func TestClaimConcurrentDuplicates(t *testing.T) {
	srv := redistest.Start(t)
	var clients []*core.Client
	for i := range 4 {
		clients = append(clients, newClient(t, srv, core.WithOwner(fmt.Sprint("replica-", i))))
	}
	ctx := testkit.Context(t, 30*time.Second)
	const rounds, dup = 20, 16
	for round := range rounds {
		key := fmt.Sprint("pay:", round)
		var runs, inside, overlaps, replays, busy atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range dup {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c := clients[i%len(clients)]
				cl, err := c.Claim(ctx, key, core.ClaimRequest{Fingerprint: "x"})
				switch {
				case errors.Is(err, core.ErrNotAcquired):
					busy.Add(1)
					return
				case err != nil:
					t.Errorf("claim: %v", err)
					return
				case cl.Replayed():
					if string(cl.Payload) != "paid "+key {
						t.Errorf("replayed %q", cl.Payload)
					}
					replays.Add(1)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				runs.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := cl.Lease.Complete(ctx, []byte("paid "+key)); err != nil {
					t.Errorf("complete: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if runs.Load() != 1 || overlaps.Load() != 0 || runs.Load()+busy.Load()+replays.Load() != dup {
			t.Fatalf("round %d: %d runs, %d overlaps, %d in progress, %d replays; want one run", round, runs.Load(), overlaps.Load(), busy.Load(), replays.Load())
		}
		for _, c := range clients { // every later retry replays it
			if cl, err := c.Claim(ctx, key, core.ClaimRequest{Fingerprint: "x"}); err != nil || !cl.Replayed() {
				t.Fatalf("retry after completion: %+v, %v", cl, err)
			}
		}
	}
}

// Wait: a retry waits for the owner's answer and replays it, woken by
// the completion's notification (the owner's TTL is far beyond the test,
// so no timer could have done it); and when the owner abandons, the
// waiter claims and runs.
func TestClaimWait(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newClient(t, srv, core.WithOwner("a")), newClient(t, srv, core.WithOwner("b"))
	ctx := testkit.Context(t, 30*time.Second)
	req := core.ClaimRequest{TTL: time.Minute}
	wreq := core.ClaimRequest{Wait: 20 * time.Second}

	for _, complete := range []bool{true, false} {
		key := fmt.Sprint("wait:", complete)
		owner := mustClaim(t, ctx, a, key, req)
		type result struct {
			cl  core.Claim
			err error
		}
		got := make(chan result, 1)
		go func() {
			cl, err := b.Claim(ctx, key, wreq)
			got <- result{cl, err}
		}()
		// The waiter's refusal flagged the record: it waits for the answer.
		testkit.WaitFor(t, 10*time.Second, "the waiter's flag on the record", func() bool {
			return srv.Client.HExists(ctx, recordKey(key), "n").Val()
		})
		if complete {
			if err := owner.Lease.Complete(ctx, []byte("answer")); err != nil {
				t.Fatal(err)
			}
		} else if err := owner.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := testkit.Recv(t, got, 15*time.Second, "the waiter's answer")
		switch {
		case r.err != nil:
			t.Fatalf("waiter: %v", r.err)
		case complete && (!r.cl.Replayed() || string(r.cl.Payload) != "answer"):
			t.Fatalf("waiter after a completion: %+v, want the answer", r.cl)
		case !complete && (r.cl.Lease == nil || r.cl.Token <= owner.Token || r.cl.TakenOver):
			t.Fatalf("waiter after an abandon: %+v, want the claim with a larger token", r.cl)
		}
		if r.cl.Lease != nil {
			_ = r.cl.Lease.Release(ctx)
		}
	}

	// A budget that runs out is a timeout (409 + Retry-After).
	owner := mustClaim(t, ctx, a, "wait:timeout", req)
	defer owner.Lease.Release(ctx)
	_, err := b.Claim(ctx, "wait:timeout", core.ClaimRequest{Wait: 100 * time.Millisecond})
	if !errors.Is(err, core.ErrNotAcquired) || core.Classify(ctx, err) != core.OutcomeTimeout {
		t.Fatalf("wait budget out: %v, want a timeout", err)
	}
}

// One round trip per claim, per completion and per replay, by Redis's
// own count (INFO commandstats); a replay writes nothing, and no key but
// the record's is ever made (no lock is taken).
func TestClaimRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	warm := mustClaim(t, ctx, c, "warm", core.ClaimRequest{}) // scripts loaded
	if err := warm.Lease.Complete(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "warm", core.ClaimRequest{}); err != nil {
		t.Fatal(err)
	}
	reset := func() {
		if err := srv.Client.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	const n = 10
	for i := range n {
		cl := mustClaim(t, ctx, c, fmt.Sprint("rt:", i), core.ClaimRequest{})
		if err := cl.Lease.Complete(ctx, []byte("answer")); err != nil {
			t.Fatal(err)
		}
	}
	calls := cmdCalls(t, srv)
	if calls["evalsha"] != 2*n || calls["eval"] != 0 {
		t.Errorf("%d claims and completions: %d EVALSHA, %d EVAL; want %d EVALSHA (all: %v)", n, calls["evalsha"], calls["eval"], 2*n, calls)
	}
	if calls["publish"] != 0 || calls["spublish"] != 0 { // nobody waited: no announcement (docs/key-layout.md)
		t.Errorf("completions with nobody waiting published (all: %v)", calls)
	}
	reset()
	for i := range n {
		cl, err := c.Claim(ctx, fmt.Sprint("rt:", i), core.ClaimRequest{})
		if err != nil || !cl.Replayed() {
			t.Fatalf("replay: %+v, %v", cl, err)
		}
	}
	calls = cmdCalls(t, srv)
	if calls["evalsha"] != n {
		t.Errorf("%d replays: %d EVALSHA, want %d (all: %v)", n, calls["evalsha"], n, calls)
	}
	for _, w := range []string{"hset", "hdel", "pexpire", "del", "set", "publish"} {
		if calls[w] != 0 {
			t.Errorf("replays wrote: %d %s (all: %v)", calls[w], w, calls)
		}
	}
	keys := srv.Client.Keys(ctx, "*").Val()
	for _, k := range keys {
		if !strings.HasPrefix(k, recordKey("")) {
			t.Errorf("key %q: only records were to be made", k)
		}
	}
	if len(keys) != n+1 {
		t.Errorf("%d keys, want %d records", len(keys), n+1)
	}
}
