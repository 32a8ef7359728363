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
// At most maxDirect round trips are in flight at once: places. A call goes
// out on its own, at once, while a place is free and nobody queues: a lone
// caller (the uncontended request) pays nothing. Beyond that, calls queue,
// and a place whose call returns does not go free while calls queue: it
// sends the queued calls as one pipeline, up to maxBatch of them, and again
// when that returns, until the queue is empty — several commands per write
// and per read, on both sides. Under load, Redis's per-command cost is
// mostly its read and write system calls, not the scripts, so this is
// where many concurrent requests gain most.
//
// Why several pipelines of bounded size rather than one of everything
// queued: a pipeline's callers are woken together when its replies are in,
// and then run one after another, each with its share of client work,
// while Redis waits for their next calls (a runtime trace of 64 callers on
// 64 keys put about 185 µs of scheduling delay on every call, behind
// batches of 30). Smaller batches on every place keep the client working
// on one batch's callers while Redis runs the next (bench S2: 23 % more
// cycles than one pipeline of everything, at the same round trips per
// cycle).
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
	inflight int // places in use: direct calls and pipelines in flight
	pipes    int // places sending pipelines, a goroutine each
	queue    []*queuedCall
	closed   bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// maxDirect bounds the round trips in flight (see batcher): enough for a
// few hot keys' hand-offs to go out at once (bench S5, 4 keys, measured
// better than 2), few enough that 64 concurrent callers batch (8 and 16
// measured worse in S2: more round trips per cycle).
const maxDirect = 4

// maxBatch bounds the calls of one pipeline (see batcher). In bench S2 (64
// callers, 4 places) 12–16 measured best; 8 and 6 cost round trips, and no
// bound cost the wake-up delay of large batches.
const maxBatch = 16

type queuedCall struct {
	ctx  context.Context
	cmd  *redis.Cmd
	done chan struct{} // closed when cmd has its reply or error
	// state: 0 queued, 1 taken by a pipeline, 2 abandoned by its caller.
	state atomic.Int32
}

func newBatcher(rdb redis.UniversalClient, direct int, bound time.Duration) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &batcher{rdb: rdb, direct: direct, bound: bound, ctx: ctx, cancel: cancel}
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
// go-redis hook): the place goes on, and so does every later call.
type errPipelinePanic struct{ v any }

func (e errPipelinePanic) Error() string {
	return fmt.Sprintf("lockkit: a go-redis hook panicked while sending a batch: %v", e.v)
}

// process runs cmd, alone or in a batch. The returned Cmd is cmd, or a new
// one carrying ctx's error when the caller left before the reply.
//
// A direct call holds its caller until the reply or the socket's deadline:
// go-redis reads the reply on the caller's goroutine, and a cancellation
// does not end the read. So a caller that may give up while its call is in
// flight (leave: a waiter's attempt after its first) makes its direct call
// on a goroutine of its own, which it can leave when ctx is cancelled
// (leaveable); the rest, the uncontended acquire's call included, make it
// on theirs (no goroutine on the path every request takes).
func (b *batcher) process(ctx context.Context, cmd *redis.Cmd, leave bool) *redis.Cmd {
	b.mu.Lock()
	if b.closed || (b.inflight < b.direct && len(b.queue) == 0) {
		b.inflight++
		if leave && !b.closed && ctx.Done() != nil {
			b.wg.Add(1) // under mu, before close can begin to Wait
			b.mu.Unlock()
			return b.leaveable(ctx, cmd)
		}
		b.mu.Unlock()
		defer b.finish() // also when a hook panics: the place in flight is given back
		_ = b.rdb.Process(ctx, cmd)
		return cmd
	}
	q := &queuedCall{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	b.queue = append(b.queue, q)
	b.mu.Unlock()
	select {
	case <-q.done:
		return cmd
	case <-ctx.Done():
		c := redis.NewCmd(ctx)
		if q.state.CompareAndSwap(0, 2) {
			c.SetErr(errNotSent) // never sent: nothing can have run
		} else {
			// Sent or being sent: its pipeline owns cmd now; don't wait for it.
			c.SetErr(&abandonedCall{done: q.done})
		}
		return c
	}
}

// leaveable is a direct call its caller leaves when ctx is cancelled, with
// an *abandonedCall whose done closes when the call is over (as a batch's
// caller leaves: see batcher). When ctx's deadline passes the caller waits
// for the call: the socket has the same deadline (ContextTimeoutEnabled),
// so it ends now too, with the socket's own timeout error.
func (b *batcher) leaveable(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	done := make(chan struct{})
	go func() {
		defer b.wg.Done()
		defer close(done)
		defer b.finish()
		defer func() {
			if v := recover(); v != nil { // a go-redis hook: answered as a batch's
				cmd.SetErr(errPipelinePanic{v})
			}
		}()
		_ = b.rdb.Process(ctx, cmd)
	}()
	select {
	case <-done:
		return cmd
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.Canceled) {
			<-done
			return cmd
		}
		c := redis.NewCmd(ctx)
		c.SetErr(&abandonedCall{done: done})
		return c
	}
}

// finish ends a direct call: with calls queued, its place sends them
// (pipeline) instead of going free.
func (b *batcher) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 && !b.closed {
		b.pipes++
		b.wg.Add(1) // under mu, before close can begin to Wait
		go b.pipeline()
		return
	}
	b.inflight--
}

// pipeline is a place sending the queue's first calls, at most maxBatch,
// one batch per round trip, until the queue is empty; then the place goes
// free. Close ends it between batches, answering what is still queued.
func (b *batcher) pipeline() {
	defer b.wg.Done()
	batch := make([]*queuedCall, 0, maxBatch)
	for {
		b.mu.Lock()
		if b.ctx.Err() != nil || len(b.queue) == 0 {
			b.pipes--
			b.inflight--
			b.mu.Unlock()
			if b.ctx.Err() != nil {
				b.failQueued()
			}
			return
		}
		batch = append(batch[:0], b.queue[:min(len(b.queue), maxBatch)]...)
		rest := copy(b.queue, b.queue[len(batch):])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.send(batch)
		clear(batch)
	}
}

// send runs the calls of batch still wanted as one pipeline, bounded by the
// latest of their deadlines (none if one has none: go-redis's read and
// write timeouts still apply). Close ends a place's run between batches,
// not a batch in flight: that ends with its own I/O.
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
	b.failQueued() // queued while no place was sending: never sent
}
