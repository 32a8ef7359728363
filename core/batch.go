package core

import (
	"context"
	"errors"
	"fmt"
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
// A caller whose context ends while its call is queued leaves at once
// (errNotSent: nothing ran); once the call is sent, the caller still leaves
// at once, with an *abandonedCall whose done channel closes when the batch
// is over: whoever gives the call's token back waits for it (see
// Client.releaseAfter), so the give-back cannot overtake the call. Every
// batch has a deadline (the latest of its callers', or bound from now when
// one has none), so a stalled Redis holds neither a caller nor Close.
type batcher struct {
	rdb redis.UniversalClient
	// direct: how many calls may be in flight before calls queue.
	direct int
	// bound limits a batch that has a caller without a deadline.
	bound time.Duration

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

func newBatcher(rdb redis.UniversalClient, direct int, bound time.Duration) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &batcher{rdb: rdb, direct: direct, bound: bound, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// errNotSent: the caller left before its queued call was sent; nothing ran.
var errNotSent = errors.New("lockkit: the call was not sent: its context ended while it waited to share a round trip")

// abandonedCall is the error of a caller that left while its call was in
// a batch in flight: the script may still run. done closes when the batch
// is over.
type abandonedCall struct {
	done <-chan struct{}
}

func (e *abandonedCall) Error() string {
	return "lockkit: no answer from redis before the call's deadline (the call was sent)"
}

// errPipelinePanic answers the calls of a batch whose pipeline panicked (a
// go-redis hook): the flusher survives, and so does every later call.
type errPipelinePanic struct{ v any }

func (e errPipelinePanic) Error() string {
	return fmt.Sprintf("lockkit: a go-redis hook panicked while sending a batch: %v", e.v)
}

// process runs cmd, alone or in a batch. The returned Cmd is cmd, or a new
// one carrying ctx's error when the caller left before the reply.
func (b *batcher) process(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	b.mu.Lock()
	if b.closed || (b.inflight < b.direct && len(b.queue) == 0) {
		b.inflight++
		b.mu.Unlock()
		defer b.finish() // also when a hook panics: the place in flight is given back
		_ = b.rdb.Process(ctx, cmd)
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
		c := redis.NewCmd(ctx)
		if q.state.CompareAndSwap(0, 2) {
			c.SetErr(errNotSent) // never sent: nothing can have run
		} else {
			// Sent or being sent: the flusher owns cmd now; don't wait for it.
			c.SetErr(&abandonedCall{done: q.done})
		}
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
	defer func() {
		if v := recover(); v != nil {
			for _, q := range batch {
				if q.state.Load() == 1 {
					q.cmd.SetErr(errPipelinePanic{v})
				}
			}
		}
		for _, q := range batch {
			if q.state.Load() == 1 {
				close(q.done)
			}
		}
	}()
	pipe := b.rdb.Pipeline()
	var latest time.Time
	unbounded := false
	var first context.Context
	for _, q := range batch {
		if q.ctx.Err() != nil || !q.state.CompareAndSwap(0, 1) {
			continue // the caller left (or is leaving): never sent
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
	if first == nil {
		return
	}
	if d := time.Now().Add(b.bound); unbounded && d.After(latest) {
		latest = d
	}
	// The first caller's values (a go-redis tracing hook nests the
	// pipeline's span under its request), not its cancellation.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(first), latest)
	defer cancel()
	_, _ = pipe.Exec(ctx)
}

// failQueued answers every queued call with ErrClosed on close (never
// sent: its caller gives nothing back).
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
