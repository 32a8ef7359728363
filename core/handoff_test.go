package core_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
)

// handoffRig is one Client talking to Redis through a proxy that a test can
// pause, a holder of key on it and a waiter of the same Client queued
// behind that holder.
type handoffRig struct {
	srv    *redistest.Server
	proxy  *tcpproxy.Proxy
	c      *core.Client
	holder *core.Lease
	waiter <-chan acquired
	ctx    context.Context
	key    string
}

func newHandoffRig(t *testing.T, key string, waiterOpts ...core.AcquireOption) *handoffRig {
	t.Helper()
	srv := redistest.Start(t)
	p, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	rdb := srv.NewClient(func(o *redis.Options) { o.Addr = p.Addr() })
	c := newClientOn(t, rdb, core.WithObserver(signaller{}))
	ctx := testkit.Context(t, 20*time.Second)
	holder, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 1)
	waiter := startWaiter(context.WithValue(ctx, signalKey{}, queued), c, key, waiterOpts...)
	testkit.Recv(t, queued, 10*time.Second, "the waiter queued behind the holder")
	return &handoffRig{srv: srv, proxy: p, c: c, holder: holder, waiter: waiter, ctx: ctx, key: key}
}

// releasePaused pauses the proxy, so that no script reaches Redis, starts
// the holder's Release and returns the waiter's lease, which it must get
// while that Release still waits for its reply, and the Release's result.
func (r *handoffRig) releasePaused(t *testing.T) (*core.Lease, <-chan error) {
	t.Helper()
	r.proxy.Pause()
	released := make(chan error, 1)
	go func() { released <- r.holder.Release(r.ctx) }()
	w := testkit.Recv(t, r.waiter, 10*time.Second, "the waiter, granted before the reply")
	if w.err != nil {
		t.Fatal(w.err)
	}
	select {
	case err := <-released:
		t.Fatalf("the holder's Release returned (%v) with Redis unreachable", err)
	default:
	}
	return w.l, released
}

// A hand-off inside a process gives the waiter the lock before the
// script's reply: with the proxy paused, so that the script has not even
// reached Redis, the waiter holds the lock with the next fencing token while
// the holder's Release is still waiting, and another process is refused
// all along (Redis has the lock under the holder's token, then the
// waiter's). The reply then confirms the waiter's lease: its deadline moves
// to the hand-off's send time + TTL, and it releases normally.
func TestHandoffReceiverStartsBeforeReply(t *testing.T) {
	rig := newHandoffRig(t, "early")
	other := newClient(t, rig.srv) // another process, straight to Redis
	ctx := rig.ctx

	wl, released := rig.releasePaused(t)
	if wl.Token() != rig.holder.Token()+1 {
		t.Fatalf("waiter's token %d, want the holder's %d + 1", wl.Token(), rig.holder.Token())
	}
	if _, err := other.TryAcquire(ctx, "early"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another process while the hand-off travels: %v, want ErrNotAcquired", err)
	}
	provisional := wl.Until()
	if !provisional.Equal(rig.holder.Until()) {
		t.Fatalf("unconfirmed lease valid until %v, want the holder's deadline %v", provisional, rig.holder.Until())
	}

	rig.proxy.Resume()
	if err := testkit.Recv(t, released, 10*time.Second, "the holder's Release"); err != nil {
		t.Fatalf("holder's Release: %v", err)
	}
	testkit.WaitFor(t, 10*time.Second, "the waiter's lease confirmed", func() bool { return wl.Until().After(provisional) })
	if err := wl.Err(); err != nil {
		t.Fatalf("waiter's lease after the reply: %v", err)
	}
	if f, err := rig.srv.Client.HGet(ctx, redisKey("early"), "f").Int64(); err != nil || f != wl.Token() {
		t.Fatalf("Redis has fence %d (%v), want the waiter's %d", f, err, wl.Token())
	}
	if _, err := other.TryAcquire(ctx, "early"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another process while the waiter holds: %v, want ErrNotAcquired", err)
	}
	if err := wl.Release(ctx); err != nil {
		t.Fatalf("waiter's Release: %v", err)
	}
	l, err := other.TryAcquire(ctx, "early")
	if err != nil {
		t.Fatalf("another process after the waiter released: %v", err)
	}
	if l.Token() <= wl.Token() {
		t.Fatalf("token %d after the waiter's %d", l.Token(), wl.Token())
	}
}

// A receiver with a shorter TTL than the releaser's starts on no more than
// its own TTL: until the reply, Redis is sure to keep the lock for the
// releaser's validity, and for the receiver's TTL from when the script
// runs, which is after the grant; the releaser's 30 s would outlive a 2 s
// expiry set by a script that then ran.
func TestHandoffProvisionalWithinReceiverTTL(t *testing.T) {
	rig := newHandoffRig(t, "short", core.TTL(2*time.Second))
	wl, released := rig.releasePaused(t)
	granted := time.Now() // the grant came before
	if wl.Until().After(granted.Add(2*time.Second)) || !wl.Until().Before(rig.holder.Until()) {
		t.Fatalf("unconfirmed 2s lease valid until %v from now (holder's %v): want within 2s of the grant", wl.Until().Sub(granted), rig.holder.Until().Sub(granted))
	}
	rig.proxy.Resume()
	if err := testkit.Recv(t, released, 10*time.Second, "the holder's Release"); err != nil {
		t.Fatalf("holder's Release: %v", err)
	}
	if err := wl.Release(rig.ctx); err != nil {
		t.Fatalf("waiter's Release: %v", err)
	}
}

// When the holder no longer holds the lock in Redis (an operator deleted
// it), the hand-off fails: the waiter, which started on the holder's
// lease, loses its lease (context ended with ErrLost), its Release says
// ErrNotHeld, the holder's Release says ErrNotHeld, and nothing of theirs
// is left in Redis.
func TestHandoffUnconfirmedLosesReceiver(t *testing.T) {
	rig := newHandoffRig(t, "gone")
	ctx := rig.ctx
	if n, err := rig.srv.Client.Del(ctx, redisKey("gone")).Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d %v", n, err)
	}
	wl, released := rig.releasePaused(t)
	rig.proxy.Resume()
	if err := testkit.Recv(t, released, 10*time.Second, "the holder's Release"); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("holder's Release: %v, want ErrNotHeld", err)
	}
	testkit.Recv(t, wl.Done(), 10*time.Second, "the waiter's lease to end")
	if cause := context.Cause(wl.Context()); !errors.Is(cause, core.ErrLost) {
		t.Fatalf("waiter's lease ended with %v, want ErrLost", cause)
	}
	if err := wl.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("waiter's Release: %v, want ErrNotHeld", err)
	}
	if n, err := rig.srv.Client.Exists(ctx, redisKey("gone")).Result(); err != nil || n != 0 {
		t.Fatalf("lock hash exists=%d (%v) after both ended", n, err)
	}
	l, err := rig.c.TryAcquire(ctx, "gone")
	if err != nil {
		t.Fatalf("the same Client afterwards: %v", err)
	}
	_ = l.Release(ctx)
}

// queueSecond queues a second waiter of the rig's Client behind the first.
func (r *handoffRig) queueSecond(t *testing.T) <-chan acquired {
	t.Helper()
	queued := make(chan struct{}, 1)
	w := startWaiter(context.WithValue(r.ctx, signalKey{}, queued), r.c, r.key)
	testkit.Recv(t, queued, 10*time.Second, "the second waiter queued")
	return w
}

// handOn has the first waiter's lease wl release while its own hand-off is
// still paused at the proxy, and returns the second waiter's lease, which
// it must be granted at once, and that Release's result.
func handOn(t *testing.T, wl *core.Lease, second <-chan acquired) (*core.Lease, <-chan error) {
	t.Helper()
	released := make(chan error, 1)
	go func() { released <- wl.Release(context.Background()) }()
	w := testkit.Recv(t, second, 10*time.Second, "the second waiter, granted before the first hand-off's reply")
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.l, released
}

// refusedLine runs a line of two hand-offs that Redis refuses at its first
// (the holder no longer holds the lock there): with the proxy paused, the
// holder's Release grants the first waiter, whose Release grants second;
// then the proxy resumes. Both Releases say ErrNotHeld, second's lease
// ends with cause ErrLost (its Release then says ErrNotHeld too), and
// handoffs, a count of the hand-off scripts Redis ran since before the
// line, says the second was never sent.
func (r *handoffRig) refusedLine(t *testing.T, second <-chan acquired, handoffs func() int) {
	t.Helper()
	wl, released := r.releasePaused(t)
	wl2, released2 := handOn(t, wl, second)
	r.proxy.Resume()
	for i, ch := range []<-chan error{released, released2} {
		if err := testkit.Recv(t, ch, 10*time.Second, "a Release of the line"); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Release %d of the line: %v, want ErrNotHeld", i+1, err)
		}
	}
	testkit.Recv(t, wl2.Done(), 10*time.Second, "the second waiter's lease to end")
	if cause := context.Cause(wl2.Context()); !errors.Is(cause, core.ErrLost) {
		t.Fatalf("second waiter's lease ended with %v, want ErrLost", cause)
	}
	if err := wl2.Release(r.ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("second waiter's Release: %v, want ErrNotHeld", err)
	}
	if n := handoffs(); n != 1 {
		t.Fatalf("%d hand-off scripts reached Redis, want 1 (the second must not be sent)", n)
	}
}

// A receiver hands on before its own hand-off's reply: with the proxy
// paused, so that no script reaches Redis, the holder's Release grants the
// first waiter, whose Release grants the second waiter the holder's token
// + 2 while both Releases wait. Redis names the holder all along, so
// another process is refused. Once the proxy resumes, the two scripts run
// in order (the second behind the first, on one connection): both Releases
// succeed, and Redis has the second waiter's token, whose lease is
// confirmed.
func TestHandoffLineRunsAhead(t *testing.T) {
	rig := newHandoffRig(t, "line")
	other := newClient(t, rig.srv)
	ctx := rig.ctx
	second := rig.queueSecond(t)
	wl, released := rig.releasePaused(t)
	wl2, released2 := handOn(t, wl, second)
	if wl2.Token() != rig.holder.Token()+2 {
		t.Fatalf("second waiter's token %d, want the holder's %d + 2", wl2.Token(), rig.holder.Token())
	}
	if !wl2.Until().Equal(rig.holder.Until()) {
		t.Fatalf("second unconfirmed lease valid until %v, want the holder's deadline %v", wl2.Until(), rig.holder.Until())
	}
	if f, err := rig.srv.Client.HGet(ctx, redisKey("line"), "f").Int64(); err != nil || f != rig.holder.Token() {
		t.Fatalf("Redis has fence %d (%v) while both scripts wait, want the holder's %d", f, err, rig.holder.Token())
	}
	if _, err := other.TryAcquire(ctx, "line"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another process while two hand-offs wait: %v, want ErrNotAcquired", err)
	}
	rig.proxy.Resume()
	for i, ch := range []<-chan error{released, released2} {
		if err := testkit.Recv(t, ch, 10*time.Second, "a Release of the line"); err != nil {
			t.Fatalf("Release %d of the line: %v", i+1, err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the second waiter's lease confirmed", func() bool { return wl2.Until().After(rig.holder.Until()) })
	if f, err := rig.srv.Client.HGet(ctx, redisKey("line"), "f").Int64(); err != nil || f != wl2.Token() {
		t.Fatalf("Redis has fence %d (%v), want the second waiter's %d", f, err, wl2.Token())
	}
	if err := wl2.Release(ctx); err != nil {
		t.Fatalf("second waiter's Release: %v", err)
	}
	l, err := other.TryAcquire(ctx, "line")
	if err != nil || l.Token() <= wl2.Token() {
		t.Fatalf("another process afterwards: %v, token %v after %d", err, l, wl2.Token())
	}
}

// A line of hand-offs breaks at its first: the holder no longer holds the
// lock in Redis (an operator deleted it) when the first hand-off runs. The
// first waiter, and the second, whom it handed on to before the reply,
// both lose their leases (ErrLost); all three Releases say ErrNotHeld; the
// second hand-off is never sent (Redis ran one hand-off script), and
// nothing is left in Redis.
func TestHandoffLineBreaks(t *testing.T) {
	rig := newHandoffRig(t, "broken")
	ctx := rig.ctx
	second := rig.queueSecond(t)
	if n, err := rig.srv.Client.Del(ctx, redisKey("broken")).Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d %v", n, err)
	}
	rig.refusedLine(t, second, scriptRuns(t, rig.srv, "handoff.lua"))
	testkit.WaitFor(t, 10*time.Second, "the give-backs done", func() bool {
		n, err := rig.srv.Client.Exists(ctx, redisKey("broken")).Result()
		return err == nil && n == 0
	})
	l, err := rig.c.TryAcquire(ctx, "broken")
	if err != nil {
		t.Fatalf("the same Client afterwards: %v", err)
	}
	_ = l.Release(ctx)
}

// Early hand-offs under stress: two Clients, each through its own proxy
// that delays every reply (so a receiver always works while its hand-off
// travels), 8 workers each on 2 keys, holds of 0–1 ms, and a third of the
// waiters with a wait budget short enough to give up, some of them at the
// moment they are granted. The witness: at most one holder per key at any
// time, fencing tokens increasing in the order holders entered, and, at the
// end, every key free in Redis and taken at once by a newcomer, unless it is
// held by a token the Clients gave back: a mutex keeps no tombstone, so an
// attempt whose caller gave up, run after its give-back (the two travel on
// different connections), takes the lock for nobody until its TTL (3 s
// here), which docs/waiting.md says. Any other holder left at the end fails.
func TestHandoffStress(t *testing.T) {
	srv := redistest.Start(t)
	var clients []*core.Client
	var handoffs handoffCounter
	var givenMu sync.Mutex
	given := map[string]bool{}
	hook := core.WithGiveBackHook(func(_, token string) {
		givenMu.Lock()
		given[token] = true
		givenMu.Unlock()
	})
	for range 2 {
		p, err := tcpproxy.New(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.SetLatency(tcpproxy.Downstream, 2*time.Millisecond)
		clients = append(clients, newClientOn(t, srv.NewClient(func(o *redis.Options) { o.Addr = p.Addr() }), core.WithObserver(&handoffs), core.WithTTL(3*time.Second), hook))
	}
	keys := []string{"stress:a", "stress:b"}
	type witness struct {
		mu     sync.Mutex
		inside int
		last   int64
		bad    []string
	}
	ws := make([]witness, len(keys))
	ctx := testkit.Context(t, 60*time.Second)
	var wg sync.WaitGroup
	var acquired, gaveUp atomic.Int64
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, k := clients[w%2], w%len(keys)
			for i := range 40 {
				var opts []core.AcquireOption
				if (w+i)%3 == 0 {
					opts = append(opts, core.Wait(time.Duration(1+(w+i)%5)*time.Millisecond))
				}
				l, err := c.Acquire(ctx, keys[k], opts...)
				if len(opts) > 0 && (errors.Is(err, core.ErrNotAcquired) || errors.Is(err, core.ErrUnavailable)) {
					gaveUp.Add(1) // the budget ended: in the queue, or before Redis answered
					continue
				}
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				acquired.Add(1)
				wk := &ws[k]
				wk.mu.Lock()
				wk.inside++
				if wk.inside != 1 {
					wk.bad = append(wk.bad, fmt.Sprintf("%d holders at once", wk.inside))
				}
				if l.Token() <= wk.last {
					wk.bad = append(wk.bad, fmt.Sprintf("token %d after %d", l.Token(), wk.last))
				}
				wk.last = l.Token()
				wk.mu.Unlock()
				if (w+i)%2 == 0 {
					time.Sleep(time.Duration((w+i)%4) * 250 * time.Microsecond)
				}
				if err := l.Err(); err != nil {
					t.Errorf("worker %d: lease ended while held: %v", w, err)
				}
				wk.mu.Lock()
				wk.inside--
				wk.mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Errorf("worker %d: release: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	for k := range ws {
		if len(ws[k].bad) > 0 {
			t.Fatalf("key %s: %v", keys[k], ws[k].bad)
		}
	}
	t.Logf("%d holds (%d by a hand-off), %d waits given up", acquired.Load(), handoffs.n.Load(), gaveUp.Load())
	if gaveUp.Load() == 0 || handoffs.n.Load() == 0 {
		t.Fatalf("no waiter gave up, or no hand-off: the run did not test them")
	}
	newcomer := newClient(t, srv)
	for _, key := range keys {
		if o := srv.Client.HGet(ctx, "lockkit:v1:k:"+key, "o").Val(); o != "" {
			givenMu.Lock()
			late := given[o]
			givenMu.Unlock()
			if !late {
				t.Fatalf("%s is held at the end by a token nobody gave back", key)
			}
			t.Logf("%s is held at the end by a late attempt of a caller that gave up (until its TTL)", key)
		}
		testkit.WaitFor(t, 10*time.Second, key+" free", func() bool {
			l, err := newcomer.TryAcquire(ctx, key)
			if err != nil {
				return false
			}
			_ = l.Release(ctx)
			return true
		})
	}
}

// handoffCounter counts the acquires that a hand-off ended.
type handoffCounter struct {
	core.NopObserver
	n atomic.Int64
}

func (h *handoffCounter) AcquireEnd(ctx context.Context, _ core.AcquireInfo, res core.AcquireResult) context.Context {
	if res.Handoff {
		h.n.Add(1)
	}
	return ctx
}

// scriptRuns logs every command srv runs from now on (the slow log, with a
// threshold of 0) and returns a count of the runs of scripts/<file> so far.
func scriptRuns(t *testing.T, srv *redistest.Server, file string) func() int {
	t.Helper()
	src, err := os.ReadFile("scripts/" + file)
	if err != nil {
		t.Fatal(err)
	}
	sha := fmt.Sprintf("%x", sha1.Sum(src))
	ctx := testkit.Context(t, 5*time.Second)
	for _, c := range [][]any{{"config", "set", "slowlog-log-slower-than", 0}, {"config", "set", "slowlog-max-len", 10000}, {"slowlog", "reset"}} {
		if err := srv.Client.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return func() int {
		log, err := srv.Client.SlowLogGet(testkit.Context(t, 5*time.Second), -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range log {
			if len(e.Args) > 1 && strings.EqualFold(e.Args[0], "evalsha") && e.Args[1] == sha {
				n++
			}
		}
		return n
	}
}
