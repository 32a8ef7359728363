package otellock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
)

// TestEveryContentionNamesItsHolder: over a contended run on one lock by
// three replicas (each its own Client and pipeline, so waiters queue
// locally, behind a lease of their own Client, and in Redis, where a
// release grants the lock to another replica's queue), with no-wait
// callers among them, every lock.contended event names an owner and has a
// link to that holder's request span, and no lock.acquire reports one
// holder twice: for a mutex, a semaphore of 2 permits, and a read/write
// lock taken by readers and writers. A lock granted to a replica's queue
// named nobody until the replica's attempt confirmed it, and the same
// holder was then reported again under its name; a reader named a writer
// queued before it (no token yet), then the same writer again holding,
// whose request span was linked already: an event without its link.
func TestEveryContentionNamesItsHolder(t *testing.T) {
	for _, tc := range []struct {
		kind string
		// acquire is caller j's acquire on c: the kind's lock, with opts.
		acquire func(c *core.Client, ctx context.Context, j int, opts ...core.AcquireOption) (*core.Lease, error)
	}{
		{"mutex", func(c *core.Client, ctx context.Context, _ int, opts ...core.AcquireOption) (*core.Lease, error) {
			return c.Acquire(ctx, "order:hot", opts...)
		}},
		{"semaphore", func(c *core.Client, ctx context.Context, _ int, opts ...core.AcquireOption) (*core.Lease, error) {
			return c.Semaphore("order:hot", 2).Acquire(ctx, opts...)
		}},
		{"rwlock", func(c *core.Client, ctx context.Context, j int, opts ...core.AcquireOption) (*core.Lease, error) {
			if j%3 == 0 { // callers 0 and 3 write (0 also with NoWait), the others read
				return c.RWLock("order:hot").Lock(ctx, opts...)
			}
			return c.RWLock("order:hot").RLock(ctx, opts...)
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			contendedRun(t, tc.acquire)
		})
	}
}

// contendedRun is TestEveryContentionNamesItsHolder's run for one kind of lock.
func contendedRun(t *testing.T, acquire func(c *core.Client, ctx context.Context, j int, opts ...core.AcquireOption) (*core.Lease, error)) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 2*time.Minute)
	const replicas, callers, rounds = 3, 6, 12
	tels := make([]*telemetry, replicas)
	clients := make([]*core.Client, replicas)
	for i := range tels {
		tels[i] = newTelemetry(t)
		clients[i] = newClient(t, srv, core.WithObserver(tels[i].obs), core.WithOwner(fmt.Sprint("replica-", i)))
	}
	var wg sync.WaitGroup
	for i := range replicas {
		for j := range callers {
			wg.Go(func() {
				for r := range rounds {
					rctx, req := tels[i].request(ctx, "request")
					opts := []core.AcquireOption{core.Name(route), core.Wait(time.Minute)}
					if j == 0 && r%2 == 1 {
						opts = []core.AcquireOption{core.Name(route), core.NoWait()}
					}
					l, err := acquire(clients[i], rctx, j, opts...)
					if err == nil {
						time.Sleep(time.Millisecond) // a critical section others queue behind
						_ = l.Release(ctx)
					}
					req.End()
				}
			})
		}
	}
	wg.Wait()

	type holder struct {
		owner string
		token int64
	}
	var events, refusals int
	for i, tel := range tels {
		for _, s := range tel.ended(otellock.SpanAcquire) {
			met := map[holder]bool{}
			links := map[holder]bool{}
			for _, l := range s.Links() {
				owner, _ := attrOf(l.Attributes, otellock.AttrHolderOwner)
				tok, _ := attrOf(l.Attributes, otellock.AttrHolderFencingToken)
				links[holder{owner.AsString(), tok.AsInt64()}] = true
			}
			// A refused NoWait: "contended", or "limited" on a semaphore.
			if v, _ := attrOf(s.Attributes(), otellock.AttrOutcome); v.AsString() == "contended" || v.AsString() == "limited" {
				refusals++
				if len(s.Events()) == 0 {
					t.Errorf("replica %d: a no-wait refusal names no holder", i)
				}
			}
			for _, ev := range s.Events() {
				if ev.Name != otellock.EventContended {
					continue
				}
				events++
				owner, _ := attrOf(ev.Attributes, otellock.AttrHolderOwner)
				tok, _ := attrOf(ev.Attributes, otellock.AttrHolderFencingToken)
				h := holder{owner.AsString(), tok.AsInt64()}
				switch {
				case h.owner == "":
					t.Errorf("replica %d: lock.contended names no owner (token %d)", i, h.token)
				case !links[h]:
					t.Errorf("replica %d: lock.contended for %s #%d has no link", i, h.owner, h.token)
				}
				if met[h] {
					t.Errorf("replica %d: one lock.acquire reports %s #%d twice", i, h.owner, h.token)
				}
				met[h] = true
			}
		}
	}
	if events < replicas*callers || refusals == 0 {
		t.Fatalf("%d lock.contended events and %d no-wait refusals: the run did not contend enough to prove anything", events, refusals)
	}
	st, err := redistest.CommandStats(context.Background(), srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	if st["publish"].Calls == 0 {
		t.Fatal("no release granted the lock to another replica's queue: the run proves nothing about grants")
	}
	t.Logf("%d lock.contended events, %d no-wait refusals, %d releases announced", events, refusals, st["publish"].Calls)
}
