package core

import (
	"context"
	"sync"
	"time"
)

// callBound gives Release's Redis call a deadline (the release timeout)
// when the caller's context has none and can never be cancelled — what
// adapters pass (context.WithoutCancel of the request's) — without what
// context.WithTimeout allocates on every request: it lives in the Lease,
// and its Done channel and timer are made only if somebody asks for Done
// (go-redis bounds socket I/O by Deadline alone).
type callBound struct {
	parent   context.Context // Done() == nil: values only
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer

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
		if d := time.Until(b.deadline); d <= 0 {
			close(b.done)
		} else {
			done := b.done
			b.timer = time.AfterFunc(d, func() { close(done) })
		}
	}
	return b.done
}

// Err agrees with Done once Done was asked for; before that, with the clock.
func (b *callBound) Err() error {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		if time.Now().Before(b.deadline) {
			return nil
		}
		return context.DeadlineExceeded
	}
	select {
	case <-done:
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
	if b.timer != nil {
		b.timer.Stop()
	}
}
