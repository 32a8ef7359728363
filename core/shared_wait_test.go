package core_test

import (
	"context"
	"errors"
	"fmt"
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

// burst: n callers of one Client take a lock that admits n at once; every
// one must get in (nobody else holds anything).
func burst(t *testing.T, n int, take func(ctx context.Context) (*core.Lease, error)) (refused int, errs []error) {
	ctx := testkit.Context(t, time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []*core.Lease
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := take(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				if errors.Is(err, core.ErrNotAcquired) {
					refused++
				}
				return
			}
			held = append(held, l)
		}()
	}
	wg.Wait()
	for _, l := range held {
		_ = l.Release(ctx)
	}
	return refused, errs
}

// giveUpBound bounds how long a caller that gave up while Redis hung may
// take to return (TestGiveUpOnHungRedisReturns).
const giveUpBound = 5 * time.Second

// burstWait bounds each caller of a burst. The property is latency: a
// caller queued behind one that went in must ask at once, not at its
// place's refresh (1.5 s); a generous bound under that refresh keeps the
// test able to fail without timing anything finer.
const burstWait = 1400 * time.Millisecond

// TestFreeSemaphoreAdmitsABurstAtOnce: 10 callers of one Client, 10
// permits, nothing else held. The head that goes in with callers queued
// behind it must not keep the queue's place in Redis (where the next head
// would wait for a grant nobody gives, since nothing is released).
func TestFreeSemaphoreAdmitsABurstAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	for round := range 3 {
		refused, errs := burst(t, 10, func(ctx context.Context) (*core.Lease, error) {
			return c.Semaphore("free", 10).Acquire(ctx, core.Wait(burstWait))
		})
		if len(errs) > 0 {
			t.Errorf("round %d: %d of 10 callers refused on a free semaphore of 10: %v", round, refused, errs[0])
		}
	}
}

// TestFreeReadSideAdmitsABurstAtOnce: the same with readers on a lock
// nobody writes.
func TestFreeReadSideAdmitsABurstAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	for round := range 3 {
		refused, errs := burst(t, 10, func(ctx context.Context) (*core.Lease, error) {
			return c.RWLock("free").RLock(ctx, core.Wait(burstWait))
		})
		if len(errs) > 0 {
			t.Errorf("round %d: %d of 10 readers refused on a lock nobody writes: %v", round, refused, errs[0])
		}
	}
}

// TestFreeReadSideAdmitsAStream: readers of one Client arrive while others
// go in (nobody writes); each must get in within its wait.
func TestFreeReadSideAdmitsAStream(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	var held []*core.Lease
	start := make(chan struct{}, 64)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.RWLock("free").RLock(ctx, core.Wait(burstWait))
			start <- struct{}{}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			held = append(held, l)
		}()
		if i%4 == 3 {
			<-start // the next four arrive after one got in
		}
	}
	wg.Wait()
	for _, l := range held {
		_ = l.Release(ctx)
	}
	if len(errs) > 0 {
		t.Errorf("%d of 40 readers refused on a lock nobody writes: %v", len(errs), errs[0])
	}
}

// waitHoldersExpired waits until every p<token> of the hash at key has an
// expiry (server TIME) in the past, and returns how many there were.
func waitHoldersExpired(t *testing.T, ctx context.Context, srv *redistest.Server, key string) int {
	t.Helper()
	var n int
	testkit.WaitFor(t, 30*time.Second, "every holder expired in Redis", func() bool {
		all := srv.Client.HGetAll(ctx, key).Val()
		now, _ := srv.Client.Time(ctx).Result()
		n = 0
		for f, v := range all {
			if f[0] != 'p' {
				continue
			}
			n++
			var exp, fence int64
			var m string
			if _, err := fmt.Sscanf(strings.ReplaceAll(v, ":", " "), "%d %d %s", &exp, &fence, &m); err != nil {
				t.Fatalf("holder %s=%q: %v", f, v, err)
			}
			if exp >= now.UnixMilli() {
				return false
			}
		}
		return true
	})
	return n
}

// TestShortenedHolderFreesAtItsExpiry: a holder that shortened its TTL
// (Extend) and died frees its permit at its own expiry, not at the TTL it
// was granted: the books' earliest expiry E must follow the shortening, or
// no step rescans the holders until the first TTL ends.
func TestShortenedHolderFreesAtItsExpiry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	rdbA := srv.NewClient()
	a := newClientOn(t, rdbA)
	l, err := a.Semaphore("s", 1).Acquire(ctx, core.TTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_ = rdbA.Close() // the holder's process dies: no renewal, no release
	if n := waitHoldersExpired(t, ctx, srv, "lockkit:v1:sk:s"); n != 1 {
		t.Fatalf("%d holders, want 1", n)
	}
	b := newClient(t, srv)
	l2, err := b.Semaphore("s", 1).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the only holder's expiry has passed in Redis, yet: %v", err)
	}
	_ = l2.Release(ctx)
}

// attemptCounter counts refused attempts (Contended with attempt > 0).
type attemptCounter struct {
	core.NopObserver
	n atomic.Int64
}

func (o *attemptCounter) Contended(_ context.Context, _ core.AcquireInfo, _ core.Holder, attempt int) {
	if attempt > 0 {
		o.n.Add(1)
	}
}

// TestReaderBehindQueuedWriterDoesNotPoll: a reader refused because a
// writer queued before it waits for its grant or the holders' expiry, not
// a few milliseconds: nothing changes in the lock while the writer waits,
// so a reader that retried at once would load Redis for nothing. The clock
// is the holder's renewals (events), not a duration, and it starts once
// the reader has been refused behind the writer.
func TestReaderBehindQueuedWriterDoesNotPoll(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	hobs := newRecorder()
	renewed := func() int { _, _, n, _ := hobs.snapshot(); return n }
	holder, writer := newClient(t, srv, core.WithObserver(hobs), core.WithTTL(300*time.Millisecond)), newClient(t, srv)
	obs := &attemptCounter{}
	reader := newClient(t, srv, core.WithObserver(obs))
	r0, err := holder.RWLock("rw").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r0.Release(ctx)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() { _, _ = writer.RWLock("rw").Lock(wctx, core.Wait(time.Minute)) }()
	waitQueuedInRedis(t, ctx, srv, "lockkit:v1:rk:rw", "Qw")
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	go func() { _, _ = reader.RWLock("rw").RLock(rctx, core.Wait(time.Minute)) }()
	testkit.WaitFor(t, 10*time.Second, "the reader refused behind the writer", func() bool { return obs.n.Load() >= 1 })
	// Nothing changes from here on: one reader holds, one writer waits.
	// The refused reader retries when the holder's lease would expire
	// (its remaining TTL, under 300 ms) since its own queueRefresh (1.5 s
	// at the default TTL) is longer: about one attempt per 3 renewals of
	// the holder (TTL 300 ms, renewed every 100 ms), so about 10 in 30
	// renewals. A reader that retried at each renewal would make 30.
	a0, r1 := obs.n.Load(), renewed()
	testkit.WaitFor(t, 30*time.Second, "30 more renewals of the holder", func() bool { return renewed() >= r1+30 })
	n := obs.n.Load() - a0
	t.Logf("the reader made %d attempts during 30 renewals of the holder", n)
	if n > 15 {
		t.Errorf("the reader made %d attempts while the lock did not change (30 renewals of the holder; about 10 expected)", n)
	}
}

// TestSharedChaos: callers of three Clients take a semaphore of 2 and
// both sides of a read/write lock with short budgets, cancellations, NoWait
// and TryAcquire; an overlap witness checks admission, and at the end every
// Client's tables are empty and Redis holds no holder, entry or grant.
func TestSharedChaos(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 3*time.Minute)
	cs := []*core.Client{newClient(t, srv), newClient(t, srv), newClient(t, srv)}
	var semIn, readers, writers atomic.Int64
	var admitted [3]atomic.Int64 // by kind: permits, reads, writes
	var bad atomic.Int64
	var badMsg atomic.Value
	fail := func(msg string) {
		bad.Add(1)
		badMsg.Store(msg)
	}
	var wg sync.WaitGroup
	for w := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[w%3]
			for i := range 100 {
				op := (w*7 + i*13) % 10
				wait := time.Duration(5+(w*i)%120) * time.Millisecond
				actx, cancel := context.WithCancel(ctx)
				if op == 9 {
					go func() { time.Sleep(wait / 2); cancel() }()
				}
				var l *core.Lease
				var err error
				kind := (w + i) % 3
				opts := []core.AcquireOption{core.Wait(wait)}
				if op == 8 {
					opts = []core.AcquireOption{core.NoWait()}
				}
				switch {
				case kind == 0 && op == 7:
					l, err = c.Semaphore("sem", 2).TryAcquire(actx)
				case kind == 0:
					l, err = c.Semaphore("sem", 2).Acquire(actx, opts...)
				case kind == 1 && op == 7:
					l, err = c.RWLock("rw").TryRLock(actx)
				case kind == 1:
					l, err = c.RWLock("rw").RLock(actx, opts...)
				case op == 7:
					l, err = c.RWLock("rw").TryLock(actx)
				default:
					l, err = c.RWLock("rw").Lock(actx, opts...)
				}
				cancel()
				if err != nil {
					if !errors.Is(err, core.ErrNotAcquired) && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrUnavailable) {
						fail("acquire: " + err.Error())
					}
					continue
				}
				admitted[kind].Add(1)
				switch kind {
				case 0:
					if n := semIn.Add(1); n > 2 {
						fail(fmt.Sprintf("%d permits of 2 held", n))
					}
				case 1:
					readers.Add(1)
					if writers.Load() > 0 {
						fail("a reader beside a writer")
					}
				case 2:
					if n := writers.Add(1); n > 1 || readers.Load() > 0 {
						fail(fmt.Sprintf("a writer beside %d writers and %d readers", n-1, readers.Load()))
					}
				}
				time.Sleep(time.Duration(i%6) * time.Millisecond)
				switch kind {
				case 0:
					semIn.Add(-1)
				case 1:
					readers.Add(-1)
				case 2:
					writers.Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					fail("release: " + err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d violations, the last: %v", bad.Load(), badMsg.Load())
	}
	// The witness above only sees callers that got in: an engine that
	// refused everyone would pass it, so each kind must have been admitted.
	for kind, what := range []string{"permits", "reads", "writes"} {
		n := admitted[kind].Load()
		if n == 0 {
			t.Errorf("no %s admitted (2400 calls, a third of each kind)", what)
		}
		t.Logf("%s admitted: %d", what, n)
	}
	for i, c := range cs {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("client %d's tables empty", i), func() bool {
			s := c.Stats()
			return s == core.Stats{}
		})
	}
	for _, key := range []string{"lockkit:v1:sk:sem", "lockkit:v1:rk:rw"} {
		all := srv.Client.HGetAll(ctx, key).Val()
		for f, v := range all {
			switch f[0] {
			case 'p', 'd', 'Q', 'I', 'A':
				t.Errorf("%s: %s=%q left after every call returned", key, f, v)
			}
		}
		t.Logf("%s: B=%q", key, all["B"])
	}
}

// TestStatsEmptyAfterClose: Close ends every lease and the queue places
// they came through; Stats must say so.
func TestStatsEmptyAfterClose(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	c := newClient(t, srv)
	if _, err := c.Semaphore("s", 2).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if s := c.Stats(); s != (core.Stats{}) {
		t.Errorf("after Close: %+v", s)
	}
}

// TestGiveUpOnHungRedisReturns: a writer queued behind a reader gives up
// while Redis hangs; Lock returns soon after (its leave goes on in the
// background), not when Redis answers or the release timeout passes.
//
// The leave waits at most 250 ms before going on in the background. The
// waiter's connections time out only after 30 s (read timeout and release
// timeout), so a leave that held the caller until Redis answered would
// hold it that long: the bound, 20 times the leave's wait, tells the two
// apart on a loaded machine too.
func TestGiveUpOnHungRedisReturns(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	holder := newClient(t, srv)
	patient := srv.NewClient(func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 30*time.Second, 30*time.Second })
	c := newClientOn(t, patient, core.WithReleaseTimeout(30*time.Second))
	r, err := holder.RWLock("rw").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.RWLock("rw").Lock(wctx, core.Wait(time.Minute))
		done <- err
	}()
	waitQueuedInRedis(t, ctx, srv, "lockkit:v1:rk:rw", "Qw")
	srv.Pause()
	cancel() // the caller gives up while Redis hangs
	at := time.Now()
	select {
	case err := <-done:
		srv.Resume()
		t.Logf("returned %v after its ctx was cancelled: %v", time.Since(at), err)
	case <-time.After(giveUpBound):
		srv.Resume()
		err := <-done
		t.Errorf("Lock returned more than %v after its ctx was cancelled, while Redis hung: %v", giveUpBound, err)
	}
}

// TestGiveUpWhileAttemptUnanswered: a waiter whose attempt after its first
// is on its way to a Redis that does not answer (its reply is dropped)
// gives up, and Acquire returns at the leave's bound, not when the
// attempt's socket times out (30 s). Redis's own counters say the attempt
// ran before the caller gave up: the give-up met it in flight. Before the
// waiter's later attempts could be left in flight, this one held the
// caller 30 s, and TestGiveUpOnHungRedisReturns failed when the pause
// caught one.
func TestGiveUpWhileAttemptUnanswered(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	px, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	patient := srv.NewClient(func(o *redis.Options) {
		o.Addr, o.ReadTimeout, o.WriteTimeout = px.Addr(), 30*time.Second, 30*time.Second
	})
	c := newClientOn(t, patient, core.WithReleaseTimeout(30*time.Second), core.WithTTL(2*time.Second))
	holder := newClient(t, srv)
	l, err := holder.Acquire(ctx, "unanswered")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Acquire(wctx, "unanswered", core.Wait(time.Minute))
		done <- err
	}()
	waitQueuedInRedis(t, ctx, srv, "lockkit:v1:k:unanswered", "i")
	scripts := func() int64 {
		st, err := redistest.CommandStats(ctx, srv.Client)
		if err != nil {
			t.Fatal(err)
		}
		return st["evalsha"].Calls + st["eval"].Calls
	}
	before := scripts()
	px.DropReplies(true) // the waiter's next attempt (its queue's refresh) runs, unanswered
	testkit.WaitFor(t, 30*time.Second, "the waiter's next attempt to run on Redis", func() bool { return scripts() > before })
	cancel()
	at := time.Now()
	select {
	case err := <-done:
		t.Logf("returned %v after its ctx was cancelled: %v", time.Since(at), err)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire = %v, want context.Canceled", err)
		}
	case <-time.After(giveUpBound):
		px.CutAll()
		t.Errorf("Acquire returned more than %v after its ctx was cancelled, its attempt unanswered: %v", giveUpBound, <-done)
	}
	px.DropReplies(false)
	px.CutAll() // the attempt's batch ends now, not at its socket's timeout (Close waits for it)
}
