package orders_test

import (
	"context"
	"errors"
	"math"
	"net/http"
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
	if _, err := s.Export(ctx, "acme", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(ctx, "acme", 4); !errors.Is(err, orders.ErrStaleToken) {
		t.Fatalf("older export token: %v", err)
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
