package core_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	// Two callers of c queue behind its own lease on snap:a, one behind
	// the other Client's lease on snap:b.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	for _, key := range []string{"snap:a", "snap:a", "snap:b"} {
		go func() {
			l, err := c.Acquire(wctx, key)
			if err == nil {
				err = l.Release(context.Background())
			}
			errs <- err
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "three queued callers", func() bool {
		return core.Queued(c, "snap:a") == 2 && core.Queued(c, "snap:b") == 1
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
	case a.Waiters != 2 || a.OldestWait.Before(before) || a.OldestWait.After(now):
		t.Errorf("snap:a waiters %d oldest %v, want 2 queued during the test", a.Waiters, a.OldestWait)
	}
	if b.Held || b.Token != 0 || !b.Until.IsZero() || b.Waiters != 1 || b.OldestWait.IsZero() {
		t.Errorf("snap:b = %+v, want not held by c, one waiter", b)
	}

	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := testkit.Recv(t, errs, 10*time.Second, "a waiter's end"); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
	}
	if got := c.Locks(); len(got) != 0 {
		t.Fatalf("after everything ended: Locks = %+v", got)
	}
}
