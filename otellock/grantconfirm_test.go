package otellock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/trace"
)

// stallAt is an Observer that stalls the acquire whose own attempt number
// at Redis refused (Contended) until resume closes, once: the test acts
// while that attempt's entry is in the lock's wait queue.
type stallAt struct {
	core.Observer
	at      int
	once    atomic.Bool
	stalled chan struct{}
	resume  chan struct{}
}

func (o *stallAt) Contended(ctx context.Context, a core.AcquireInfo, h core.Holder, attempt int) {
	o.Observer.Contended(ctx, a, h, attempt)
	if attempt == o.at && o.once.CompareAndSwap(false, true) {
		close(o.stalled)
		<-o.resume
	}
}

// TestGrantTakenByTheNextWaiterNamesIt: a release grants the lock to a
// process's queue under the owner id and metadata its head wrote at its
// last attempt; when that head gives up before it confirms and the next
// caller of its queue takes the grant, Redis names the caller that took
// it (its request's span context) from the confirming attempt on, with the
// grant's fencing token: a waiter that asks then links to the request that
// holds, not to the one that gave up.
func TestGrantTakenByTheNextWaiterNamesIt(t *testing.T) {
	for _, tc := range []struct {
		kind string
		at   int // the head's first attempt that leaves its queue in Redis
		// acquire takes the lock of this kind on c.
		acquire func(c *core.Client, ctx context.Context, opts ...core.AcquireOption) (*core.Lease, error)
		hash    string
	}{
		{"mutex", 2, func(c *core.Client, ctx context.Context, opts ...core.AcquireOption) (*core.Lease, error) {
			return c.Acquire(ctx, "k", opts...)
		}, "lockkit:v1:k:k"},
		{"semaphore", 1, func(c *core.Client, ctx context.Context, opts ...core.AcquireOption) (*core.Lease, error) {
			return c.Semaphore("k", 1).Acquire(ctx, opts...)
		}, "lockkit:v1:sk:k"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := testkit.Context(t, time.Minute)
			holder := newClient(t, srv, core.WithOwner("holder"))
			telW, telX := newTelemetry(t), newTelemetry(t)
			stall := &stallAt{Observer: telW.obs, at: tc.at, stalled: make(chan struct{}), resume: make(chan struct{})}
			waiter := newClient(t, srv, core.WithOwner("waiter"), core.WithObserver(stall))
			watcher := newClient(t, srv, core.WithOwner("watcher"), core.WithObserver(telX.obs))

			h, err := tc.acquire(holder, ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The head (gives up), and the caller queued behind it (takes the grant).
			type result struct {
				l   *core.Lease
				err error
			}
			headCtx, giveUp := context.WithCancel(ctx)
			headCtx, head := telW.request(headCtx, "head")
			nextCtx, next := telW.request(ctx, "next")
			headDone, nextDone := make(chan error, 1), make(chan result, 1)
			go func() {
				_, err := tc.acquire(waiter, headCtx)
				headDone <- err
			}()
			testkit.Recv(t, stall.stalled, 10*time.Second, "the head queued in Redis")
			go func() {
				l, err := tc.acquire(waiter, nextCtx)
				nextDone <- result{l, err}
			}()
			waitQueued(t, waiter, "the next caller queued behind the head")
			headSpan, nextSpan := head.SpanContext().SpanID().String(), next.SpanContext().SpanID().String()
			if err := h.Release(ctx); err != nil { // grants the lock to the waiter's queue, as its head last described it
				t.Fatal(err)
			}
			_, err = tc.acquire(watcher, ctx, core.NoWait())
			var na *core.NotAcquiredError
			if !errors.As(err, &na) || na.Holder.Owner != "waiter" || !strings.Contains(na.Holder.Metadata, headSpan) {
				t.Fatalf("before the grant is taken: %v, holder %+v; want the waiter's head (span %s)", err, na.Holder, headSpan)
			}
			grant := na.Holder.Token

			giveUp()
			close(stall.resume)
			if err := testkit.Recv(t, headDone, 10*time.Second, "the head giving up"); !errors.Is(err, context.Canceled) {
				t.Fatalf("the head: %v, want context.Canceled", err)
			}
			r := testkit.Recv(t, nextDone, 10*time.Second, "the next caller")
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.l.Release(ctx)
			if r.l.Token() != grant {
				t.Fatalf("the next caller holds #%d, not the grant #%d", r.l.Token(), grant)
			}
			var named, stale bool
			fields := srv.Client.HGetAll(ctx, tc.hash).Val()
			if len(fields) == 0 {
				t.Fatalf("%s: no such hash", tc.hash)
			}
			for f, v := range fields {
				named = named || strings.Contains(v, nextSpan)
				if strings.Contains(v, headSpan) {
					stale = true
					t.Errorf("field %s still names the head that gave up: %q", f, v)
				}
			}
			if !named {
				t.Errorf("no field of %s names the caller that took the grant (span %s)", tc.hash, nextSpan)
			}
			if stale || !named {
				return
			}

			telX.sr.Reset()
			_, err = tc.acquire(watcher, ctx, core.NoWait())
			if !errors.As(err, &na) || na.Holder.Token != grant {
				t.Fatalf("after the grant is taken: %v, want the holder #%d", err, grant)
			}
			links := telX.one(t, otellock.SpanAcquire).Links()
			if len(links) != 1 || links[0].SpanContext.SpanID() != trace.SpanContextFromContext(nextCtx).SpanID() {
				t.Fatalf("a refused caller links to %v, want the request that holds (span %s)", links, nextSpan)
			}
			head.End()
			next.End()
		})
	}
}

// TestKeptPlaceNamesTheNextWaiter: a shared lock's caller that goes in
// while callers of its Client wait behind it keeps its queue's place in
// the lock's wait queue for them, in the same step. The entry then
// describes the next of them (its request's span context), whom the next
// grant to the queue and a reader kept out by it name until it confirms:
// not the caller that went in, which holds a lease of its own (a waiter
// that met both saw one request under two tokens, and linked it once).
func TestKeptPlaceNamesTheNextWaiter(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		acquire func(c *core.Client, ctx context.Context) (*core.Lease, error)
		hash    string
	}{
		{"semaphore", func(c *core.Client, ctx context.Context) (*core.Lease, error) {
			return c.Semaphore("k", 1).Acquire(ctx)
		}, "lockkit:v1:sk:k"},
		{"write", func(c *core.Client, ctx context.Context) (*core.Lease, error) {
			return c.RWLock("k").Lock(ctx)
		}, "lockkit:v1:rk:k"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := testkit.Context(t, time.Minute)
			holder := newClient(t, srv, core.WithOwner("holder"))
			tel := newTelemetry(t)
			tp := newTap(tel.obs)
			waiter := newClient(t, srv, core.WithOwner("waiter"), core.WithObserver(tp))
			h, err := tc.acquire(holder, ctx)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				l   *core.Lease
				err error
			}
			firstCtx, first := tel.request(ctx, "first")
			nextCtx, next := tel.request(ctx, "next")
			defer first.End()
			defer next.End()
			firstDone, nextDone := make(chan result, 1), make(chan result, 1)
			go func() {
				l, err := tc.acquire(waiter, firstCtx)
				firstDone <- result{l, err}
			}()
			testkit.Recv(t, tp.contended, 10*time.Second, "the first caller refused, its queue in Redis")
			go func() {
				l, err := tc.acquire(waiter, nextCtx)
				nextDone <- result{l, err}
			}()
			waitQueued(t, waiter, "the next caller queued behind the first")
			if err := h.Release(ctx); err != nil { // grants to the waiter's queue: the first caller goes in
				t.Fatal(err)
			}
			r := testkit.Recv(t, firstDone, 10*time.Second, "the first caller")
			if r.err != nil {
				t.Fatal(r.err)
			}
			firstSpan, nextSpan := first.SpanContext().SpanID().String(), next.SpanContext().SpanID().String()
			var entries int
			for f, v := range srv.Client.HGetAll(ctx, tc.hash).Val() {
				if f[0] != 'Q' {
					continue
				}
				entries++
				if !strings.Contains(v, nextSpan) {
					t.Errorf("the kept entry %s = %q names not the next caller (span %s) but %s", f, v, nextSpan,
						map[bool]string{true: "the caller that went in", false: "nobody known"}[strings.Contains(v, firstSpan)])
				}
			}
			if entries != 1 {
				t.Errorf("%d entries in the wait queue, want the waiter's queue's, kept", entries)
			}
			if err := r.l.Release(ctx); err != nil { // grants to the queue again: the next caller's turn
				t.Fatal(err)
			}
			if r := testkit.Recv(t, nextDone, 10*time.Second, "the next caller"); r.err != nil {
				t.Fatal(r.err)
			} else {
				_ = r.l.Release(ctx)
			}
		})
	}
}

// waitQueued waits until two callers of c wait for key "k": the first in
// Redis's wait queue, the second behind it in c's local queue.
func waitQueued(t *testing.T, c *core.Client, what string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, what, func() bool {
		for _, s := range c.Locks() {
			if s.Key == "k" && s.Waiters == 2 {
				return true
			}
		}
		return false
	})
}
