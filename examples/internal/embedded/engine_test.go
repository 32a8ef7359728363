package embedded_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/internal/testkit"
)

// contentions counts the attempts that found the lock held.
type contentions struct {
	core.NopObserver
	n atomic.Int32
}

func (c *contentions) Contended(context.Context, core.AcquireInfo, core.Holder, int) { c.n.Add(1) }

// The one test that proves the engine runs on miniredis, the examples'
// embedded default (behaviour is tested on real redis-server): a holder
// excludes another Client, whose waiter is woken by the release
// notification and gets a larger fencing token.
func TestEngineRunsOnMiniredis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	newClient := func(opts ...core.Option) *core.Client {
		rdb := r.NewClient()
		t.Cleanup(func() { _ = rdb.Close() })
		c, err := core.New(rdb, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	obs := &contentions{}
	a, b := newClient(), newClient(core.WithObserver(obs))
	l, err := a.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "order:42"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrNotAcquired", err)
	}
	got := make(chan *core.Lease, 1)
	go func() {
		w, err := b.Acquire(ctx, "order:42")
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	// The TryAcquire above and the waiter's first attempt met the holder.
	testkit.WaitFor(t, 10*time.Second, "the waiter to meet the holder", func() bool { return obs.n.Load() >= 2 })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var w *core.Lease
	select {
	case w = <-got:
	case <-ctx.Done():
		t.Fatal("the waiter was not woken by the release")
	}
	if w == nil || w.Token() <= l.Token() {
		t.Fatalf("waiter's lease %v after token %d", w, l.Token())
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
