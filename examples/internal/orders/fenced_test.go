package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
)

// The point of the fenced book: a holder that lost its lock (removed here
// by ForceRelease, as an expiry during a pause would) writes late with its
// older token after the next holder wrote, and the resource — the fenced
// record in Redis, one call — refuses it; the book keeps the newer write.
func TestFencedBookRefusesALateWrite(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Two replicas, each with its own lock Client.
	locks, err := core.New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	other, err := core.New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f, err := fence.NewRedis(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	book := orders.NewStore(0).Fence(f, orders.Records{Prefix: "orders:"})

	a, err := locks.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.ForceRelease(ctx, "order:1"); err != nil {
		t.Fatal(err)
	}
	b, err := other.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	if b.Token() <= a.Token() {
		t.Fatalf("tokens %d then %d", a.Token(), b.Token())
	}
	if _, err := book.Pay(ctx, "1", b.Token(), 100); err != nil {
		t.Fatal(err)
	}
	_, err = book.Pay(ctx, "1", a.Token(), 500) // the lost holder, late
	if !errors.Is(err, orders.ErrStaleToken) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("late write with the older token: %v, want ErrStaleToken from the fenced store", err)
	}
	if err := a.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("the lost lease's release: %v, want ErrNotHeld", err)
	}
	if o := book.Get("1"); o.Balance != 100 || o.Token != b.Token() {
		t.Errorf("order %+v, want balance 100 at token %d", o, b.Token())
	}
	tok, ok, err := book.FencedToken(ctx, "1")
	if err != nil || !ok || tok != b.Token() {
		t.Errorf("fenced record: token %d (found %v, %v), want %d", tok, ok, err, b.Token())
	}
}
