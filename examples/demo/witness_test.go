package main

import (
	"context"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/examples/internal/orders"
)

// Each check of the witness fails on what it is there to catch, made
// deterministically: a writer nested inside another (two holders at once),
// a store write behind the witness's back (a lost update), equal tokens (a
// stale write accepted), a replica that wrote nothing.
func TestWitnessCatches(t *testing.T) {
	ctx := context.Background()
	store := orders.NewStore(0)
	w := newWitness(store)
	gin, echo := w.book("gin"), w.book("echo")
	pay := func(b orders.Book, id string, token int64) {
		if _, err := b.Pay(ctx, id, token, 100); err != nil {
			t.Fatal(err)
		}
	}
	pay(gin, "ok", 1)
	pay(echo, "ok", 2)
	if v := w.check([]string{"gin", "echo"}); !v.holds() || v.writes != 2 || v.entered != 2 || v.hottest != "ok" || len(v.trail) != 2 {
		t.Fatalf("clean run: %+v", v)
	}

	// order "overlap": echo writes (token 6) while gin (token 5) is inside;
	// the store then refuses gin's older token.
	if _, err := w.watch("gin", "overlap", 5, func() (orders.Order, error) {
		pay(echo, "overlap", 6)
		return store.Pay(ctx, "overlap", 5, 100)
	}, func(*trail) {}); err == nil {
		t.Fatal("stale write accepted by the store")
	}
	// order "lost": a write the witness did not see.
	pay(gin, "lost", 1)
	if _, err := store.Pay(ctx, "lost", 2, 100); err != nil {
		t.Fatal(err)
	}
	// order "same": two writes with one token, both accepted by the store.
	pay(gin, "same", 3)
	pay(echo, "same", 3)

	v := w.check([]string{"gin", "echo", "grpc"})
	if v.holds() || v.stale != 1 {
		t.Fatalf("verdict holds (%d stale refused)", v.stale)
	}
	want := map[string]string{
		"no lost update, no double payment": "order lost: balance 200, not 100",
		"no overlapping holders":            "order overlap: 1 overlaps (a writer entered",
		"no stale-token write accepted":     "order same: write 2 carried token 3 (echo) after 3 (gin)",
		"every replica wrote":               "grpc wrote nothing",
	}
	for _, c := range v.checks {
		if sub, bad := want[c.what]; bad != !c.ok || (bad && !strings.Contains(c.detail, sub)) {
			t.Errorf("%s: ok %v, %q; want failed %v with %q", c.what, c.ok, c.detail, bad, sub)
		}
	}
}
