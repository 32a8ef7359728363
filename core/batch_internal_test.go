package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// trips counts what go-redis sends: single commands and pipelines (one
// round trip each) and the commands inside pipelines.
type trips struct{ single, pipes, piped atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.single.Add(1); return next(ctx, cmd) }
}
func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.pipes.Add(1)
		c.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// Concurrent callers share round trips: 64 goroutines on 64 keys send
// at least two scripts per round trip on average, every script is answered, and each key's
// overlap counter stays at one holder.
func TestBatchedCallsShareRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(func(o *redis.Options) { o.PoolSize = 128 })
	tr := &trips{}
	rdb.AddHook(tr)
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const workers, cycles = 64, 50
	var inside [workers]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range cycles {
				l, err := c.Acquire(ctx, fmt.Sprintf("batch:%d", w))
				if err != nil {
					errs <- err
					return
				}
				if inside[w].Add(1) != 1 {
					errs <- errors.New("overlap")
				}
				inside[w].Add(-1)
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	scripts := tr.single.Load() + tr.piped.Load()
	trips := tr.single.Load() + tr.pipes.Load()
	if scripts < workers*cycles*2 {
		t.Fatalf("%d scripts sent for %d cycles", scripts, workers*cycles)
	}
	// (go-redis also initialises each new connection with a pipeline.)
	if 2*trips > scripts {
		t.Fatalf("no call shared a round trip: %d scripts in %d round trips (%d pipelines)", scripts, trips, tr.pipes.Load())
	}
	t.Logf("%d scripts in %d round trips (%d pipelines)", scripts, trips, tr.pipes.Load())
}

// A queued call whose caller's context ends leaves at once with the
// context's error and is never sent; a call already sent to a Redis that
// does not answer leaves at its caller's deadline too. Nothing hangs.
func TestBatchedCallLeavesWithItsContext(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	b := newBatcher(rdb, 1, DefaultReleaseTimeout)
	defer b.close()
	incr := func(ctx context.Context, key string) *redis.Cmd {
		return b.process(ctx, redis.NewCmd(ctx, "incr", key), false)
	}
	if err := incr(context.Background(), "batch:sent").Err(); err != nil {
		t.Fatal(err)
	}
	srv.Pause() // the next call is in flight and unanswered; later ones queue
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		first <- incr(ctx, "batch:sent").Err()
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := incr(ctx, "batch:queued").Err(); !errors.Is(err, errNotSent) {
		t.Fatalf("queued call: %v, want errNotSent", err)
	}
	if err := <-first; err == nil {
		t.Fatal("the call sent to a paused Redis succeeded")
	}
	srv.Resume()
	resumed = true
	// The queued call's own key: had it been sent, it would be 1 before
	// this increment (the paused server runs what it got once resumed).
	n, err := incr(context.Background(), "batch:queued").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the abandoned queued call was sent: counter %d", n)
	}
}

// Calls queued when the Client closes are answered with ErrClosed and no
// pipeline goroutine is left (the package's goleak check).
func TestBatcherCloseAnswersQueuedCalls(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	b := newBatcher(rdb, 1, DefaultReleaseTimeout)
	srv.Pause()
	defer srv.Resume()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.process(ctx, redis.NewCmd(ctx, "ping"), false)
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == 1 })
	queued := make(chan error, 1)
	go func() {
		ctx := context.Background()
		queued <- b.process(ctx, redis.NewCmd(ctx, "ping"), false).Err()
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 1 })
	b.close()
	select {
	case err := <-queued:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("queued call on close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued call hung on close")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

// panicHook panics in every command while on.
type panicHook struct{ on atomic.Bool }

func (h *panicHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() {
			panic("hook")
		}
		return next(ctx, cmd)
	}
}
func (h *panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A go-redis hook that panics in a direct call (a caller that recovers, as
// net/http does) gives its place in flight back: afterwards calls still go
// out at once.
func TestBatcherSurvivesPanickingHook(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	h := &panicHook{}
	rdb.AddHook(h)
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h.on.Store(true)
	for range maxDirect + 1 {
		func() {
			defer func() { _ = recover() }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, _ = c.TryAcquire(ctx, "batch:panic")
		}()
	}
	h.on.Store(false)
	b := c.b.(*primary).batch
	b.mu.Lock()
	inflight := b.inflight
	b.mu.Unlock()
	if inflight != 0 {
		t.Fatalf("%d places in flight after the panics", inflight)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.TryAcquire(ctx, "batch:panic")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}

// gatePipes, once armed, holds every pipeline of cmd (scripts: evalsha)
// at its hook until open is closed, recording its size and telling entered
// when one arrives.
type gatePipes struct {
	cmd     string
	armed   atomic.Bool
	entered chan struct{}
	open    chan struct{}

	mu    sync.Mutex
	sizes []int
}

func (g *gatePipes) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *gatePipes) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g *gatePipes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if g.armed.Load() && len(cmds) > 0 && cmds[0].Name() == g.cmd {
			g.mu.Lock()
			g.sizes = append(g.sizes, len(cmds))
			g.mu.Unlock()
			g.entered <- struct{}{}
			<-g.open
		}
		return next(ctx, cmds)
	}
}

// An acquire whose caller left after its batch was taken (the request was
// cancelled) may still run: the caller's give-back waits for the batch, so
// it cannot overtake the acquire and leave the lock to a token nobody has
// for a whole TTL (30 s here). It waits however long the batch takes, not
// only the release timeout: a batch's deadline is the latest of its
// callers', and the give-back may go out at once on a place another call
// left free.
func TestAbandonedAcquireGivenBackAfterItRuns(t *testing.T) {
	const releaseTimeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name string
		long bool // a caller with a long deadline shares the batch, which outlasts the release timeout
	}{
		{"batch within the release timeout", false},
		{"batch longer than the release timeout", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.NewClient(func(o *redis.Options) { o.ReadTimeout = time.Minute })
			g := &gatePipes{cmd: "evalsha", entered: make(chan struct{}, 1), open: make(chan struct{})}
			rdb.AddHook(g)
			c, err := New(rdb, WithReleaseTimeout(releaseTimeout))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			opened := sync.OnceFunc(func() { close(g.open) })
			defer opened()
			bg := context.Background()
			warmScripts(t, c)
			b := c.b.(*primary).batch
			b.direct = 2
			blocked := fillPlaces(t, b, "batch:block1", "batch:block2")
			g.armed.Store(true)
			ctx, cancel := context.WithCancel(bg) // a request: no deadline
			res := make(chan error, 1)
			go func() { _, err := c.TryAcquire(ctx, "batch:orphan"); res <- err }()
			waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 1 })
			other := make(chan error, 1)
			if tc.long {
				long, cancelLong := context.WithTimeout(bg, time.Minute) // its deadline is the batch's
				defer cancelLong()
				go func() {
					l, err := c.TryAcquire(long, "batch:other")
					if err == nil {
						err = l.Release(bg)
					}
					other <- err
				}()
				waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 2 })
			} else {
				other <- nil
			}
			srv.Client.LPush(bg, "batch:block1", "x") // its place sends the queued acquires as a pipeline
			<-g.entered                               // the batch is on its way, held at the hook
			srv.Client.LPush(bg, "batch:block2", "x") // a place is free for the give-back
			for range 2 {
				if err := <-blocked; err != nil {
					t.Fatal(err)
				}
			}
			cancel() // the request leaves while its acquire is in flight
			if err := <-res; !errors.Is(err, context.Canceled) {
				t.Fatalf("TryAcquire: %v", err)
			}
			if tc.long {
				// The batch outlasts the release timeout several times over:
				// the condition under test, not a wait for something to happen.
				time.Sleep(4 * releaseTimeout)
			}
			opened() // the acquires run now
			if err := <-other; err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.pipes == 0 })
			waitFor(t, func() bool { // 5 s: far less than the TTL an orphaned token would hold it
				_, held, err := c.Inspect(bg, "batch:orphan")
				return err == nil && !held
			})
		})
	}
}

// Close does not wait on a batch in flight longer than the release
// timeout, even when a caller in it had no deadline and go-redis has no
// read timeout.
func TestCloseBoundedWithUnboundedBatch(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = -1, -1 })
	c, err := New(rdb, WithReleaseTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b := c.b.(*primary).batch
	b.direct = 1
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	go func() { _, _ = c.TryAcquire(short, "batch:a") }() // direct, ends at its deadline
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == 1 })
	reqCtx, reqCancel := context.WithCancel(context.Background()) // no deadline
	go func() { _, _ = c.TryAcquire(reqCtx, "batch:b") }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.pipes > 0 })
	reqCancel()
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		srv.Resume()
		resumed = true
		<-done
		t.Fatal("Close blocked on a batch whose callers all left")
	}
}

// fillPlaces fills b's places in flight, one per key, with calls blocked in
// Redis (BLPOP, a minute at most): an LPush to a key frees its place. The
// channel answers each call.
func fillPlaces(t *testing.T, b *batcher, keys ...string) <-chan error {
	t.Helper()
	bg := context.Background()
	blocked := make(chan error, len(keys))
	for _, k := range keys {
		go func() { blocked <- b.process(bg, redis.NewCmd(bg, "blpop", k, 60), false).Err() }()
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == len(keys) })
	return blocked
}

// warmScripts takes and gives back a lock with c, so its scripts are loaded
// and later calls go as EVALSHA.
func warmScripts(t *testing.T, c *Client) {
	t.Helper()
	bg := context.Background()
	l, err := c.TryAcquire(bg, "batch:warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// Every place whose call returns while calls queue sends them, so several
// pipelines are in flight at once, and none carries more than maxBatch
// calls: callers woken by one batch's replies are few enough to run while
// Redis runs the next. Every call is answered once.
func TestQueuedCallsGoInSeveralBoundedPipelines(t *testing.T) {
	srv := redistest.Start(t)
	// Timeouts far beyond the test's own waits: a blocked BLPOP and a held
	// pipeline must not time out on a slow machine.
	rdb := srv.NewClient(func(o *redis.Options) { o.PoolSize, o.ReadTimeout = 16, time.Minute })
	h := &gatePipes{cmd: "incr", entered: make(chan struct{}, 8), open: make(chan struct{})}
	h.armed.Store(true)
	rdb.AddHook(h)
	b := newBatcher(rdb, 2, time.Minute)
	defer b.close()
	release := sync.OnceFunc(func() { close(h.open) })
	defer release() // before close, which waits for the held pipelines
	bg := context.Background()
	within := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			h.mu.Lock()
			defer h.mu.Unlock()
			t.Fatalf("%s: not within 20s (pipeline sizes so far %v)", what, h.sizes)
		}
	}
	type answer struct {
		n   int64
		err error
	}
	blocked := fillPlaces(t, b, "batch:block1", "batch:block2")
	const queued = 2*maxBatch + 3
	got := make(chan answer, queued)
	for range queued {
		go func() {
			n, err := b.process(bg, redis.NewCmd(bg, "incr", "batch:n"), false).Int64()
			got <- answer{n, err}
		}()
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == queued })
	srv.Client.LPush(bg, "batch:block1", "x") // the first place sends a batch, held at the hook
	within("the first place's pipeline", h.entered)
	srv.Client.LPush(bg, "batch:block2", "x") // the second sends the next while the first is held
	within("the second place's pipeline, the first still in flight", h.entered)
	release()
	seen := map[int64]bool{}
	for range queued {
		select {
		case a := <-got:
			if a.err != nil {
				t.Fatal(a.err)
			}
			seen[a.n] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d queued calls answered within 20s", len(seen), queued)
		}
	}
	for range 2 {
		if err := <-blocked; err != nil { // answered: the LPushes came before
			t.Fatal(err)
		}
	}
	if len(seen) != queued || !seen[1] || !seen[queued] {
		t.Fatalf("INCR answers %v, want 1..%d once each", seen, queued)
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.pipes == 0 && b.inflight == 0 })
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for _, n := range h.sizes {
		total += n
		if n > maxBatch {
			t.Fatalf("a pipeline of %d calls (sizes %v), more than maxBatch %d", n, h.sizes, maxBatch)
		}
	}
	if total != queued {
		t.Fatalf("pipelines carried %d calls (sizes %v), want %d", total, h.sizes, queued)
	}
}
