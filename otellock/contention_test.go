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

// TestEveryContentionNamesItsHolder: over a contended run on one key by
// three replicas (each its own Client and pipeline, so waiters queue
// locally, behind a lease of their own Client, and in Redis, where a
// release grants the lock to another replica's queue), with no-wait
// callers among them, every lock.contended event names an owner and has a
// link to that holder's request span, and no lock.acquire reports one
// holder twice. A lock granted to a replica's queue named nobody until
// the replica's attempt confirmed it, and the same holder was then
// reported again under its name.
func TestEveryContentionNamesItsHolder(t *testing.T) {
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
					l, err := clients[i].Acquire(rctx, "order:hot", opts...)
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

	var events, refusals int
	for i, tel := range tels {
		for _, s := range tel.ended(otellock.SpanAcquire) {
			tokens := map[int64]bool{}
			links := map[int64]bool{}
			for _, l := range s.Links() {
				v, _ := attrOf(l.Attributes, otellock.AttrHolderFencingToken)
				links[v.AsInt64()] = true
			}
			if v, _ := attrOf(s.Attributes(), otellock.AttrOutcome); v.AsString() == "contended" {
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
				switch {
				case owner.AsString() == "":
					t.Errorf("replica %d: lock.contended names no owner (token %d)", i, tok.AsInt64())
				case !links[tok.AsInt64()]:
					t.Errorf("replica %d: lock.contended for %s #%d has no link", i, owner.AsString(), tok.AsInt64())
				}
				if tokens[tok.AsInt64()] {
					t.Errorf("replica %d: one lock.acquire reports holder #%d twice", i, tok.AsInt64())
				}
				tokens[tok.AsInt64()] = true
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
