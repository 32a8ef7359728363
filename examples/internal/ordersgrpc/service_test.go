package ordersgrpc

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/orders"
)

// The book's errors become the codes the proto documents.
func TestStatusOf(t *testing.T) {
	for err, want := range map[error]codes.Code{
		orders.ErrBadAmount:                       codes.InvalidArgument,
		fmt.Errorf("x: %w", orders.ErrOverflow):   codes.InvalidArgument,
		orders.ErrNotPaid:                         codes.FailedPrecondition,
		orders.ErrAlreadyShipped:                  codes.FailedPrecondition,
		fmt.Errorf("x: %w", orders.ErrStaleToken): codes.Aborted,
		context.Canceled:                          codes.Canceled,
		context.DeadlineExceeded:                  codes.DeadlineExceeded,
		core.ErrLost:                              codes.Unavailable,
	} {
		if got := status.Code(statusOf(err)); got != want {
			t.Errorf("statusOf(%v) = %v, want %v", err, got, want)
		}
	}
}

// Called without the lock in front (token 0), the service still checks its
// input and maps the book's answers; an unset amount is DefaultAmount.
func TestServiceUnlocked(t *testing.T) {
	ctx := context.Background()
	s := NewService(orders.NewStore(0))
	r, err := s.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "1"})
	if err != nil || r.GetOrder().GetBalanceCents() != orders.DefaultAmount || r.GetFencingToken() != 0 {
		t.Fatalf("PayOrder: %v %v", r, err)
	}
	if _, err := s.RefundOrder(ctx, &ordersv1.RefundOrderRequest{OrderId: "1", AmountCents: 1000}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("refund above the balance: %v", err)
	}
	if r, err := s.ShipOrder(ctx, &ordersv1.ShipOrderRequest{OrderId: "1"}); err != nil || !r.GetOrder().GetShipped() {
		t.Fatalf("ShipOrder: %v %v", r, err)
	}
	for _, err := range []error{
		errOf(s.PayOrder(ctx, &ordersv1.PayOrderRequest{})),
		errOf(s.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "1", AmountCents: -5})),
		errOf(s.RefundOrder(ctx, &ordersv1.RefundOrderRequest{})),
		errOf(s.ShipOrder(ctx, &ordersv1.ShipOrderRequest{})),
		errOf(s.GetOrder(ctx, &ordersv1.GetOrderRequest{})),
	} {
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("bad input: %v", err)
		}
	}
	if o, err := s.GetOrder(ctx, &ordersv1.GetOrderRequest{OrderId: "1"}); err != nil || o.GetPayments() != 1 || !o.GetShipped() {
		t.Fatalf("GetOrder: %v %v", o, err)
	}
}

func errOf[T any](_ T, err error) error { return err }
