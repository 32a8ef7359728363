package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// testClusterShared: a semaphore and a read/write lock on keys of every
// master: each lives in its own key's slot (the shared hash is one key, its
// shard channel named like it), and a waiter on each is woken by the
// holder's release on that shard: three attempts (refused, the
// subscription's confirmation, the release), never a timer (the holders'
// TTL is 30s).
func testClusterShared(t *testing.T, cl *redistest.Cluster) {
	ctx := testkit.Context(t, 30*time.Second)
	holder := testkit.Client(t, cl.NewClient())
	rec := newKeyRecorder()
	waiter := testkit.Client(t, cl.NewClient(), core.WithObserver(rec))

	// One key per master for each kind, found by the slot of its hash name.
	type pick struct {
		key, kind string
	}
	var picks []pick
	for _, kind := range []string{"sk", "rk"} {
		seen := map[*redistest.Server]bool{}
		for i := 0; len(seen) < len(cl.Masters()); i++ {
			if i > 10000 {
				t.Fatal("no keys found for every master")
			}
			k := fmt.Sprintf("shared-%s-%d", kind, i)
			m := cl.Master(core.KeySlot(core.DefaultPrefix + ":" + core.LayoutVersion + ":" + kind + ":" + k))
			if !seen[m] {
				seen[m] = true
				picks = append(picks, pick{k, kind})
			}
		}
	}
	var leases []*core.Lease
	results := map[string]<-chan acquired{}
	for _, p := range picks {
		var l *core.Lease
		var err error
		if p.kind == "sk" {
			l, err = holder.Semaphore(p.key, 1).Acquire(ctx, core.TTL(30*time.Second))
		} else {
			l, err = holder.RWLock(p.key).RLock(ctx, core.TTL(30*time.Second))
		}
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		ch := make(chan acquired, 1)
		results[p.key] = ch
		go func() {
			var wl *core.Lease
			var err error
			if p.kind == "sk" {
				wl, err = waiter.Semaphore(p.key, 1).Acquire(ctx)
			} else {
				wl, err = waiter.RWLock(p.key).Lock(ctx)
			}
			ch <- acquired{wl, err}
		}()
	}
	for k := range results {
		testkit.WaitFor(t, 10*time.Second, "two attempts on "+k, func() bool { return rec.count(k) >= 2 })
	}
	for _, l := range leases {
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	for k, ch := range results {
		r := testkit.Recv(t, ch, 10*time.Second, "the waiter on "+k)
		if r.err != nil {
			t.Fatalf("waiter on %q: %v", k, r.err)
		}
		_ = r.l.Release(ctx)
		if end := rec.end(k); end.Outcome != core.OutcomeAcquired || end.Attempts > 3 {
			t.Errorf("waiter on %q: %v after %d attempts, want acquired after at most 3", k, end.Outcome, end.Attempts)
		}
	}
}
