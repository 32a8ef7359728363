package core

import (
	"context"
	"sync"
	"time"
)

// callBound gives Release's Redis call a deadline (the release timeout)
// when the caller's context has none and can never be cancelled — what
// adapters pass (context.WithoutCancel of the request's) — with fewer
// allocations than context.WithTimeout: the context itself lives in the
// Lease, and its Done channel and timer are made when somebody asks for
// Done (go-redis's pool does, on every command). end closes it: after the
// call, Done is closed and Err is context.Canceled, as for a cancelled
// WithTimeout.
type callBound struct {
	parent   context.Context // Done() == nil: values only
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer
	ended bool
	once  sync.Once // closes done

	cancel context.CancelFunc // when bound fell back to context.WithTimeout
}

// bound returns ctx with d as deadline: ctx itself when it has a deadline,
// b when ctx can never be cancelled, otherwise context.WithTimeout
// (cancellation must propagate). Call b.end when the call is over.
func (b *callBound) bound(ctx context.Context, d time.Duration) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	if ctx.Done() != nil {
		c, cancel := context.WithTimeout(ctx, d)
		b.cancel = cancel
		return c
	}
	b.parent, b.deadline = ctx, time.Now().Add(d)
	return b
}

func (b *callBound) Deadline() (time.Time, bool) { return b.deadline, true }
func (b *callBound) Value(k any) any             { return b.parent.Value(k) }

func (b *callBound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		if d := time.Until(b.deadline); b.ended || d <= 0 {
			b.closeDone()
		} else {
			b.timer = time.AfterFunc(d, b.closeDone)
		}
	}
	return b.done
}

func (b *callBound) closeDone() { b.once.Do(func() { close(b.done) }) }

// Err agrees with Done once Done was asked for; before that, with the clock.
func (b *callBound) Err() error {
	b.mu.Lock()
	done, ended := b.done, b.ended
	b.mu.Unlock()
	switch {
	case done == nil && ended:
		return context.Canceled
	case done == nil && time.Now().Before(b.deadline):
		return nil
	case done == nil:
		return context.DeadlineExceeded
	}
	select {
	case <-done:
		if ended && time.Now().Before(b.deadline) {
			return context.Canceled
		}
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// end releases the timer of whichever bound was made.
func (b *callBound) end() {
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parent == nil { // bound returned another context
		return
	}
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
	if b.done != nil {
		b.closeDone()
	}
}
