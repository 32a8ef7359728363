package main

import (
	"context"
	"errors"
	"iter"
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
	if _, err := w.watch("gin", "overlap", 5, "pay", func() (orders.Order, error) {
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

// lines yields one line of 100 cents per sku, calling during(sku) after
// the store took it: what during does happens inside the import.
func lines(during func(sku string), skus ...string) iter.Seq2[orders.Line, error] {
	return func(yield func(orders.Line, error) bool) {
		for _, s := range skus {
			if !yield(orders.Line{SKU: s, Quantity: 1, UnitCents: 100}, nil) {
				return
			}
			during(s)
		}
	}
}

// The stream check, fed deterministically through the witness's books: a
// pay before an import, an export after it and a refund after that leave it
// holding; a pay made between two lines of an import (what the lock on
// order:<id> forbids) fails it, naming both, and fails nothing else; so
// does an export whose send pays the order it exports. The lines the
// imports added are tallied against the store.
func TestWitnessStreams(t *testing.T) {
	ctx := context.Background()
	w := newWitness(orders.NewStore(0))
	gin, echo, grpc := w.book("gin"), w.book("echo"), w.book("grpc")
	nothing := func(string) {}
	pay := func(b orders.Book, id string, token int64) {
		t.Helper()
		if _, err := b.Pay(ctx, id, token, 100); err != nil {
			t.Fatal(err)
		}
	}
	export := func(id string, send func(orders.Line) error) {
		t.Helper()
		if _, err := grpc.ExportLines(ctx, id, send); err != nil {
			t.Fatal(err)
		}
	}

	pay(gin, "a", 1)
	if o, n, err := grpc.Import(ctx, "a", 2, lines(nothing, "x", "y")); err != nil || n != 2 || o.Lines != 2 {
		t.Fatalf("import: %+v %d %v", o, n, err)
	}
	export("a", func(orders.Line) error { return nil })
	if _, err := echo.Refund(ctx, "a", 3, 100); err != nil {
		t.Fatal(err)
	}
	v := w.check([]string{"gin", "echo", "grpc"})
	if !v.holds() || v.imports != 1 || v.exports != 1 || v.lines != 2 || v.writes != 3 || v.entered != 4 {
		t.Fatalf("clean run: %+v", v)
	}

	// order "b": echo pays (token 6) between the import's two lines (token
	// 5). Each write is whole, so only the stream check can see it.
	if _, _, err := grpc.Import(ctx, "b", 5, lines(func(sku string) {
		if sku == "x" {
			pay(echo, "b", 6)
		}
	}, "x", "y")); !errors.Is(err, orders.ErrStaleToken) {
		t.Fatalf("the import's second line, older than the pay inside it: %v", err)
	}
	// order "c": gin pays while an export of it is reading.
	pay(gin, "c", 7)
	if _, _, err := grpc.Import(ctx, "c", 8, lines(nothing, "x")); err != nil {
		t.Fatal(err)
	}
	export("c", func(orders.Line) error { pay(gin, "c", 9); return nil })

	v = w.check([]string{"gin", "echo", "grpc"})
	for _, c := range v.checks {
		switch {
		case c.what == checkStreams: // the busiest order first: c
			if c.ok || !strings.Contains(c.detail, "order c: pay on gin [") || !strings.Contains(c.detail, "] overlapped export on grpc [") || !strings.Contains(c.detail, "(and 1 more)") {
				t.Errorf("%s: ok %v, %q", c.what, c.ok, c.detail)
			}
		case !c.ok:
			t.Errorf("%s failed: %s", c.what, c.detail)
		}
	}
	if bad := streamOverlap("b", w.orders["b"].spans); !strings.Contains(bad, "order b: pay on echo [") || !strings.Contains(bad, "] overlapped import on grpc [") {
		t.Errorf("order b: %q", bad)
	}

	// The same check on spans made by hand: touching is not overlapping,
	// straddling either end of a stream is, so is a stream inside a stream.
	imp := span{from: 10, to: 20, what: "import", replica: "grpc"}
	for _, tc := range []struct {
		x    span
		want bool
	}{
		{span{from: 1, to: 9, what: "pay"}, false},
		{span{from: 21, to: 22, what: "refund"}, false},
		{span{from: 5, to: 11, what: "pay"}, true},
		{span{from: 19, to: 25, what: "ship"}, true},
		{span{from: 12, to: 13, what: "pay"}, true},
		{span{from: 12, to: 13, what: "export"}, true},
		{span{from: 1, to: 30, what: "import"}, true},
	} {
		if got := streamOverlap("o", []span{tc.x, imp}) != ""; got != tc.want {
			t.Errorf("%+v against %+v: overlap %v, want %v", tc.x, imp, got, tc.want)
		}
	}
	if bad := streamOverlap("o", []span{{from: 1, to: 4, what: "pay"}, {from: 2, to: 3, what: "refund"}}); bad != "" {
		t.Errorf("two writes without a stream: %s (that is the overlap check's job)", bad)
	}
}
