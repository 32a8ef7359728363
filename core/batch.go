package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher lets the script calls of concurrent callers share round trips.
// A call goes out on its own, at once, while fewer than maxDirect calls are
// in flight: a lone caller (the uncontended request) pays nothing. Beyond
// that, calls queue, and one flusher goroutine sends everything queued as
// one pipeline whenever a call in flight returns — as many commands per
// write and per read, on both sides, as callers arrived meanwhile. Under
// load, Redis's per-command cost is mostly its read and write system calls,
// not the scripts, so this is where many concurrent requests gain most.
//
// A caller whose context ends while its call is queued leaves with the
// context's error and the call is never sent; once sent, the caller still
// leaves at once and the reply is dropped (the callers treat that as they
// treat a timeout: the script may have run).
type batcher struct {
	rdb redis.UniversalClient
	// direct: how many calls may be in flight before calls queue.
	direct int

	mu       sync.Mutex
	inflight int // direct calls in flight, plus 1 while the flusher has work
	flushing bool
	queue    []*queuedCall
	spare    []*queuedCall // the queue's previous backing array, reused
	started  bool
	closed   bool

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// maxDirect bounds the calls in flight on their own (see batcher): enough
// for a few hot keys' hand-offs to go out at once (bench S5, 4 keys,
// measured better than 2), few enough that 64 concurrent callers batch.
const maxDirect = 4

type queuedCall struct {
	ctx  context.Context
	cmd  *redis.Cmd
	done chan struct{} // closed when cmd has its reply or error
	// state: 0 queued, 1 taken by the flusher, 2 abandoned by its caller.
	state atomic.Int32
}

func newBatcher(rdb redis.UniversalClient, direct int) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &batcher{rdb: rdb, direct: direct, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// process runs cmd, alone or in a batch. The returned Cmd is cmd, or a new
// one carrying ctx's error when the caller left before the reply.
func (b *batcher) process(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	b.mu.Lock()
	if b.closed || (b.inflight < b.direct && len(b.queue) == 0) {
		b.inflight++
		b.mu.Unlock()
		_ = b.rdb.Process(ctx, cmd)
		b.finish()
		return cmd
	}
	q := &queuedCall{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	b.queue = append(b.queue, q)
	if !b.started {
		b.started = true
		b.wg.Add(1)
		go b.flusher()
	}
	b.mu.Unlock()
	select {
	case <-q.done:
		return cmd
	case <-ctx.Done():
		if q.state.CompareAndSwap(0, 2) {
			// Never sent: nothing can have run.
			c := redis.NewCmd(ctx)
			c.SetErr(ctx.Err())
			return c
		}
		// Sent or being sent: the flusher owns cmd now; don't wait for it.
		c := redis.NewCmd(ctx)
		c.SetErr(ctx.Err())
		return c
	}
}

// finish ends a direct call: its place in flight goes to the flusher when
// calls are queued.
func (b *batcher) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 && !b.flushing {
		b.flushing = true // the flusher takes over this place in flight
		poke(b.kick)
		return
	}
	b.inflight--
}

func (b *batcher) flusher() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			b.failQueued()
			return
		case <-b.kick:
		}
		for {
			b.mu.Lock()
			batch := b.queue
			b.queue, b.spare = b.spare[:0], nil
			if len(batch) == 0 {
				b.flushing = false
				b.inflight--
				b.mu.Unlock()
				break
			}
			b.mu.Unlock()
			b.send(batch)
			clear(batch)
			b.mu.Lock()
			b.spare = batch[:0]
			b.mu.Unlock()
		}
	}
}

// send runs the calls of batch still wanted as one pipeline, bounded by the
// latest of their deadlines (none if one has none: go-redis's read and
// write timeouts still apply). Close ends the flusher's wait, not a batch
// in flight: that ends with its own I/O.
func (b *batcher) send(batch []*queuedCall) {
	pipe := b.rdb.Pipeline()
	var latest time.Time
	unbounded := false
	var first context.Context
	for _, q := range batch {
		if !q.state.CompareAndSwap(0, 1) {
			continue // abandoned while queued
		}
		if first == nil {
			first = q.ctx
		}
		if d, ok := q.ctx.Deadline(); !ok {
			unbounded = true
		} else if d.After(latest) {
			latest = d
		}
		_ = pipe.Process(q.ctx, q.cmd)
	}
	if first != nil {
		// The first caller's values (a go-redis tracing hook nests the
		// pipeline's span under its request), not its cancellation.
		ctx := context.WithoutCancel(first)
		if !unbounded {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, latest)
			defer cancel()
		}
		_, _ = pipe.Exec(ctx)
	}
	for _, q := range batch {
		if q.state.Load() == 1 {
			close(q.done)
		}
	}
}

// failQueued answers every queued call with ErrClosed on close.
func (b *batcher) failQueued() {
	b.mu.Lock()
	queue := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, q := range queue {
		if q.state.CompareAndSwap(0, 1) {
			q.cmd.SetErr(ErrClosed)
			close(q.done)
		}
	}
}

func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
