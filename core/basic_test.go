package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

func TestAcquireRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)

	l, err := c.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if l.Key() != "order:42" || l.Token() <= 0 {
		t.Fatalf("lease key %q token %d", l.Key(), l.Token())
	}
	if lf, ok := core.LeaseFromContext(l.Context()); !ok || lf != l {
		t.Fatal("LeaseFromContext(lease.Context()) does not return the lease")
	}
	h, held, err := c.Inspect(ctx, "order:42")
	if err != nil || !held || h.Token != l.Token() || h.Owner != c.Owner() {
		t.Fatalf("Inspect = %+v %v %v", h, held, err)
	}
	if h.TTL <= 0 || h.TTL > core.DefaultTTL {
		t.Fatalf("Inspect TTL %v", h.TTL)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Release did not end the lease context")
	}
	if !errors.Is(l.Err(), core.ErrNotHeld) {
		t.Fatalf("Err after release = %v", l.Err())
	}
	if _, held, _ := c.Inspect(ctx, "order:42"); held {
		t.Fatal("still held after release")
	}
	l2, err := c.Acquire(ctx, "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l.Token() {
		t.Fatalf("fencing token did not increase: %d then %d", l.Token(), l2.Token())
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// the key is redis-side: check the layout
	keys, _ := srv.Client.Keys(ctx, "*").Result()
	for _, k := range keys {
		if k != "lockkit:v1:k:order:42" {
			t.Fatalf("unexpected redis key %q", k)
		}
	}
	if f, _ := srv.Client.HGet(ctx, "lockkit:v1:k:order:42", "f").Int64(); f != l2.Token() {
		t.Fatalf("kept fence %d, want %d", f, l2.Token())
	}
	if o, _ := srv.Client.HGet(ctx, "lockkit:v1:k:order:42", "o").Result(); o != "" {
		t.Fatalf("owner %q kept after release, want empty (free)", o)
	}
	if pttl, _ := srv.Client.PTTL(ctx, "lockkit:v1:k:order:42").Result(); pttl <= 0 || pttl > 30*time.Second {
		t.Fatalf("released hash expires in %v, want within the lease's TTL", pttl)
	}
	_ = context.Background
}
