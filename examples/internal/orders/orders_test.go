package orders_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/orders"
)

// The store is fenced: a write with an older token than the order's last
// is refused, an equal or newer one accepted.
func TestFencing(t *testing.T) {
	s := orders.NewStore(0)
	ctx := context.Background()
	if _, err := s.Pay(ctx, "1", 10, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pay(ctx, "1", 9, 100); !errors.Is(err, orders.ErrStaleToken) || orders.HTTPStatus(err) != http.StatusConflict {
		t.Fatalf("older token: %v", err)
	}
	o, err := s.Refund(ctx, "1", 11, 40)
	if err != nil || o.Balance != 60 || o.Token != 11 {
		t.Fatalf("refund: %+v %v", o, err)
	}
	// Exports run side by side under a semaphore: a permit's token orders
	// starts, not ends, so an older one is not refused.
	if _, err := s.Export(ctx, "acme", 5); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Export(ctx, "acme", 4); err != nil || e.Number != 2 {
		t.Fatalf("second export: %+v %v", e, err)
	}
	// Settings: the write side's tokens are refused when older.
	if _, err := s.SetSettings(ctx, "acme", "pro", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSettings(ctx, "acme", "free", 6); !errors.Is(err, orders.ErrStaleToken) {
		t.Fatalf("older settings token: %v", err)
	}
	if st, err := s.Settings(ctx, "acme"); err != nil || st.Plan != "pro" || st.Version != 1 {
		t.Fatalf("settings: %+v %v", st, err)
	}
}

// A transfer moves balance between two orders, each write with its own
// order's token; a short balance, one order, or an older token on either
// side is refused and changes nothing.
func TestTransfer(t *testing.T) {
	s := orders.NewStore(0)
	ctx := context.Background()
	if _, err := s.Pay(ctx, "a", 10, 100); err != nil {
		t.Fatal(err)
	}
	a, b, err := s.Transfer(ctx, "a", "b", 11, 3, 60)
	if err != nil || a.Balance != 40 || b.Balance != 60 || a.Token != 11 || b.Token != 3 || a.Transfers != 1 {
		t.Fatalf("transfer: %+v %+v %v", a, b, err)
	}
	if _, _, err := s.Transfer(ctx, "a", "b", 12, 4, 41); !errors.Is(err, orders.ErrNotPaid) {
		t.Fatalf("short balance: %v", err)
	}
	if _, _, err := s.Transfer(ctx, "a", "b", 12, 2, 1); !errors.Is(err, orders.ErrStaleToken) {
		t.Fatalf("older token on the receiving side: %v", err)
	}
	if _, _, err := s.Transfer(ctx, "a", "a", 12, 12, 1); !errors.Is(err, orders.ErrBadAmount) {
		t.Fatalf("to itself: %v", err)
	}
	if got := s.Get("a").Balance + s.Get("b").Balance; got != 100 {
		t.Fatalf("money not conserved: %d", got)
	}
}

// A write whose context ends during its work (client gone, lock lost) is
// not written.
func TestCancelledWriteIsDropped(t *testing.T) {
	s := orders.NewStore(time.Minute)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("lock lost")
	cancel(cause)
	if _, err := s.Pay(ctx, "1", 1, 100); !errors.Is(err, cause) || orders.HTTPStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("Pay with ended ctx: %v", err)
	}
	if o := s.Get("1"); o.Payments != 0 {
		t.Fatalf("written anyway: %+v", o)
	}
}

func TestRules(t *testing.T) {
	s := orders.NewStore(0)
	ctx := context.Background()
	if _, err := s.Ship(ctx, "1", 1); !errors.Is(err, orders.ErrNotPaid) {
		t.Fatalf("ship unpaid: %v", err)
	}
	if _, err := s.Refund(ctx, "1", 1, 1); !errors.Is(err, orders.ErrNotPaid) {
		t.Fatalf("refund unpaid: %v", err)
	}
	_, _ = s.Pay(ctx, "1", 1, 1)
	if _, err := s.Ship(ctx, "1", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ship(ctx, "1", 3); !errors.Is(err, orders.ErrAlreadyShipped) {
		t.Fatalf("ship twice: %v", err)
	}
	for in, want := range map[string]int64{"": orders.DefaultAmount, "250": 250} {
		if n, err := orders.ParseAmount(in); err != nil || n != want {
			t.Errorf("ParseAmount(%q) = %d %v", in, n, err)
		}
	}
	for _, in := range []string{"0", "-5", "abc", "12abc"} {
		if _, err := orders.ParseAmount(in); !errors.Is(err, orders.ErrBadAmount) {
			t.Errorf("ParseAmount(%q) = %v", in, err)
		}
	}
}

// A payment that would overflow the balance is refused (400) and changes
// nothing; one that fits right up to the limit is taken.
func TestPayOverflow(t *testing.T) {
	s := orders.NewStore(0)
	ctx := context.Background()
	if _, err := s.Pay(ctx, "1", 1, math.MaxInt64-1); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Pay(ctx, "1", 2, 1); err != nil || o.Balance != math.MaxInt64 {
		t.Fatalf("pay up to the limit: %+v %v", o, err)
	}
	for _, cents := range []int64{1, math.MaxInt64} {
		o, err := s.Pay(ctx, "1", 3, cents)
		if !errors.Is(err, orders.ErrOverflow) || orders.HTTPStatus(err) != http.StatusBadRequest {
			t.Errorf("pay %d on a balance of MaxInt64: %+v %v", cents, o, err)
		}
	}
	if o := s.Get("1"); o.Balance != math.MaxInt64 || o.Payments != 2 || o.Token != 2 {
		t.Fatalf("after refused payments: %+v", o)
	}
}

// seq yields lines, then err (when not nil).
func seq(err error, lines ...orders.Line) func(func(orders.Line, error) bool) {
	return func(yield func(orders.Line, error) bool) {
		for _, l := range lines {
			if !yield(l, nil) {
				return
			}
		}
		if err != nil {
			yield(orders.Line{}, err)
		}
	}
}

// Import adds each line (fenced, counted in the order's Lines and Total)
// and ExportLines reads them back in order; an import stops at its first
// bad line or broken upload, keeping the lines before it; an export stops
// when send fails or its context ends.
func TestLines(t *testing.T) {
	s := orders.NewStore(0)
	ctx := context.Background()
	a, b := orders.Line{SKU: "a", Quantity: 2, UnitCents: 150}, orders.Line{SKU: "b", Quantity: 1, UnitCents: 0}
	o, n, err := s.Import(ctx, "1", 5, seq(nil, a, b))
	if err != nil || n != 2 || o.Lines != 2 || o.Total != 300 || o.Token != 5 || s.Get("1") != o {
		t.Fatalf("import: %+v %d %v", o, n, err)
	}
	var got []orders.Line
	if n, err := s.ExportLines(ctx, "1", func(l orders.Line) error { got = append(got, l); return nil }); err != nil || n != 2 || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("export: %d %v %+v", n, err, got)
	}

	// More lines than a page: every one, in order.
	many := make([]orders.Line, 2*orders.PageSize+1)
	for i := range many {
		many[i] = orders.Line{SKU: strconv.Itoa(i), Quantity: 1}
	}
	if _, n, err := s.Import(ctx, "3", 1, seq(nil, many...)); err != nil || n != len(many) {
		t.Fatalf("import of %d lines: %d %v", len(many), n, err)
	}
	got = got[:0]
	if n, err := s.ExportLines(ctx, "3", func(l orders.Line) error { got = append(got, l); return nil }); err != nil || n != len(many) || !slices.Equal(got, many) {
		t.Fatalf("export of %d lines: %d %v, %d lines", len(many), n, err, len(got))
	}

	broken := errors.New("upload broken")
	for _, tc := range []struct {
		name  string
		lines func(func(orders.Line, error) bool)
		want  error
		added int
	}{
		{"no sku", seq(nil, a, orders.Line{Quantity: 1}), orders.ErrBadLine, 1},
		{"no quantity", seq(nil, orders.Line{SKU: "x"}), orders.ErrBadLine, 0},
		{"negative price", seq(nil, orders.Line{SKU: "x", Quantity: 1, UnitCents: -1}), orders.ErrBadLine, 0},
		{"line overflows", seq(nil, orders.Line{SKU: "x", Quantity: 3, UnitCents: math.MaxInt64 / 2}), orders.ErrOverflow, 0},
		{"total overflows", seq(nil, a, orders.Line{SKU: "x", Quantity: 1, UnitCents: math.MaxInt64 - 100}), orders.ErrOverflow, 1},
		{"broken upload", seq(broken, a), broken, 1},
	} {
		s := orders.NewStore(0)
		o, n, err := s.Import(ctx, "2", 1, tc.lines)
		if !errors.Is(err, tc.want) || n != tc.added || o.Lines != tc.added || s.Get("2") != o {
			t.Errorf("%s: %+v %d %v, want %v after %d lines", tc.name, o, n, err, tc.want, tc.added)
		}
	}
	if orders.HTTPStatus(orders.ErrBadLine) != http.StatusBadRequest {
		t.Error("a bad line is not a 400")
	}
	if _, _, err := s.Import(ctx, "1", 4, seq(nil, a)); !errors.Is(err, orders.ErrStaleToken) {
		t.Fatalf("import with an older token: %v", err)
	}

	stop := errors.New("client gone")
	if n, err := s.ExportLines(ctx, "1", func(orders.Line) error { return stop }); !errors.Is(err, stop) || n != 0 {
		t.Fatalf("export whose send fails: %d %v", n, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.ExportLines(cctx, "1", func(orders.Line) error { return nil }); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("export after its context ended: %d %v", n, err)
	}
}
