package core_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

func TestHashKey(t *testing.T) {
	for _, key := range []string{"order:42", "", "ключ", string(make([]byte, 300))} {
		sum := sha256.Sum256([]byte(key))
		want := hex.EncodeToString(sum[:])[:16]
		if got := core.HashKey(key); got != want {
			t.Errorf("HashKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestLocks: Locks lists what the Client holds (token, deadline, TTL) and
// what it queues for, held or not (waiters, oldest wait), and nothing once
// all is over.
func TestLocks(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithTTL(5*time.Second))
	other := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)

	if got := c.Locks(); len(got) != 0 {
		t.Fatalf("idle Client: Locks = %+v", got)
	}
	before := time.Now()
	la, err := c.Acquire(ctx, "snap:a", core.Name("route-a"))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := other.Acquire(ctx, "snap:b")
	if err != nil {
		t.Fatal(err)
	}
	// Eleven callers of c queue behind its own lease on snap:a, under ten
	// names (one twice), one behind the other Client's lease on snap:b.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type call struct{ key, name string }
	var calls []call
	for i := range 10 {
		calls = append(calls, call{"snap:a", fmt.Sprintf("waiter-%d", i)})
	}
	calls = append(calls, call{"snap:a", "waiter-0"}, call{"snap:b", "route-b"})
	errs := make(chan error, len(calls))
	for _, cl := range calls {
		go func() {
			l, err := c.Acquire(wctx, cl.key, core.Name(cl.name))
			if err == nil {
				err = l.Release(context.Background())
			}
			errs <- err
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "twelve queued callers, snap:b's holder met", func() bool {
		if core.Queued(c, "snap:a") != 11 || core.Queued(c, "snap:b") != 1 {
			return false
		}
		got := c.Locks()
		return len(got) == 2 && !got[1].Holder.Seen.IsZero()
	})
	now := time.Now()
	got := c.Locks()
	if len(got) != 2 || got[0].Key != "snap:a" || got[1].Key != "snap:b" {
		t.Fatalf("Locks = %+v, want snap:a and snap:b in order", got)
	}
	a, b := got[0], got[1]
	switch {
	case !a.Held || a.Token != la.Token() || a.Name != "route-a" || a.TTL != 5*time.Second:
		t.Errorf("snap:a = %+v, want held with token %d, name route-a, TTL 5s", a, la.Token())
	case a.AcquiredAt.Before(before) || a.AcquiredAt.After(now):
		t.Errorf("snap:a acquired at %v, not within the test's [%v, %v]", a.AcquiredAt, before, now)
	case !a.Until.After(now) || a.Until.After(now.Add(5*time.Second)):
		t.Errorf("snap:a until %v, want within (now, now+TTL]", a.Until)
	case a.Waiters != 11 || a.OldestWait.Before(before) || a.OldestWait.After(now):
		t.Errorf("snap:a waiters %d oldest %v, want 11 queued during the test", a.Waiters, a.OldestWait)
	case !a.Holder.Seen.IsZero():
		t.Errorf("snap:a is held by c, yet a holder is reported: %+v", a.Holder)
	}
	// The waiting routes, each once and at most MaxWaitingNames of them.
	seen := map[string]bool{}
	for _, n := range a.WaitingNames {
		if seen[n] || !strings.HasPrefix(n, "waiter-") {
			t.Errorf("snap:a waiting names %q: %q twice or not a waiter's", a.WaitingNames, n)
		}
		seen[n] = true
	}
	if len(a.WaitingNames) != core.MaxWaitingNames {
		t.Errorf("snap:a waiting names %q: want MaxWaitingNames, %d, of the 10 names", a.WaitingNames, core.MaxWaitingNames)
	}
	if b.Held || b.Token != 0 || !b.Until.IsZero() || b.Waiters != 1 || b.OldestWait.IsZero() {
		t.Errorf("snap:b = %+v, want not held by c, one waiter", b)
	}
	// Who waits on snap:b, and for whom: the other Client's lease.
	if !slices.Equal(b.WaitingNames, []string{"route-b"}) || b.Holder.Owner != other.Owner() || b.Holder.Token != lb.Token() {
		t.Errorf("snap:b waiting %q for %+v; want route-b waiting for %s #%d", b.WaitingNames, b.Holder, other.Owner(), lb.Token())
	}

	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range calls {
		if err := testkit.Recv(t, errs, 10*time.Second, "a waiter's end"); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
	}
	if got := c.Locks(); len(got) != 0 {
		t.Fatalf("after everything ended: Locks = %+v", got)
	}
}
