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
	b := newBatcher(rdb, 1)
	defer b.close()
	ping := func(ctx context.Context) *redis.Cmd {
		return b.process(ctx, redis.NewCmd(ctx, "incr", "batch:sent"))
	}
	if err := ping(context.Background()).Err(); err != nil {
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
		first <- ping(ctx).Err()
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ping(ctx).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call: %v", err)
	}
	if err := <-first; err == nil {
		t.Fatal("the call sent to a paused Redis succeeded")
	}
	srv.Resume()
	resumed = true
	n, err := ping(context.Background()).Int64()
	if err != nil {
		t.Fatal(err)
	}
	// 1 before the pause, maybe 1 for the call in flight (sent before
	// the pause took the server), never the queued one, 1 now.
	if n > 3 {
		t.Fatalf("the abandoned queued call was sent: counter %d", n)
	}
}

// Calls queued when the Client closes are answered with ErrClosed and the
// flusher goroutine ends (the package's goleak check).
func TestBatcherCloseAnswersQueuedCalls(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	b := newBatcher(rdb, 1)
	srv.Pause()
	defer srv.Resume()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.process(ctx, redis.NewCmd(ctx, "ping"))
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inflight == 1 })
	queued := make(chan error, 1)
	go func() {
		ctx := context.Background()
		queued <- b.process(ctx, redis.NewCmd(ctx, "ping")).Err()
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
