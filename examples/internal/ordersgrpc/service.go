// Package ordersgrpc serves the examples' order book (examples/internal/orders)
// over gRPC as orders.v1.Orders, with the calls that change an order under
// the lock order:<order_id>: the key the gin and echo examples build for
// /orders/:id, so all of them exclude each other. The gRPC example and the
// demo both run this server.
package ordersgrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/orders"
)

// Service implements ordersv1.OrdersServer on a Book. It takes no lock
// itself: NewServer puts grpclock in front of it.
type Service struct {
	ordersv1.UnimplementedOrdersServer
	book orders.Book
}

// NewService returns the service on book.
func NewService(book orders.Book) *Service { return &Service{book: book} }

// token is the fencing token of the lock the call holds (0 unlocked): the
// book refuses a write with a token older than the order's last.
func token(ctx context.Context) int64 {
	if l, ok := core.LeaseFromContext(ctx); ok {
		return l.Token()
	}
	return 0
}

// PayOrder adds the amount to the order's balance.
func (s *Service) PayOrder(ctx context.Context, r *ordersv1.PayOrderRequest) (*ordersv1.PayOrderResponse, error) {
	cents, err := amount(r.GetOrderId(), r.GetAmountCents())
	if err != nil {
		return nil, err
	}
	// ctx ends if the caller leaves or the lock is lost (cause core.ErrLost).
	o, err := s.book.Pay(ctx, r.GetOrderId(), token(ctx), cents)
	if err != nil {
		return nil, statusOf(err)
	}
	return &ordersv1.PayOrderResponse{Order: message(o), FencingToken: token(ctx)}, nil
}

// RefundOrder takes the amount back from the balance.
func (s *Service) RefundOrder(ctx context.Context, r *ordersv1.RefundOrderRequest) (*ordersv1.RefundOrderResponse, error) {
	cents, err := amount(r.GetOrderId(), r.GetAmountCents())
	if err != nil {
		return nil, err
	}
	o, err := s.book.Refund(ctx, r.GetOrderId(), token(ctx), cents)
	if err != nil {
		return nil, statusOf(err)
	}
	return &ordersv1.RefundOrderResponse{Order: message(o), FencingToken: token(ctx)}, nil
}

// ShipOrder ships a paid order, once.
func (s *Service) ShipOrder(ctx context.Context, r *ordersv1.ShipOrderRequest) (*ordersv1.ShipOrderResponse, error) {
	if r.GetOrderId() == "" {
		return nil, errNoID
	}
	o, err := s.book.Ship(ctx, r.GetOrderId(), token(ctx))
	if err != nil {
		return nil, statusOf(err)
	}
	return &ordersv1.ShipOrderResponse{Order: message(o), FencingToken: token(ctx)}, nil
}

// GetOrder reads an order, unlocked.
func (s *Service) GetOrder(_ context.Context, r *ordersv1.GetOrderRequest) (*ordersv1.Order, error) {
	if r.GetOrderId() == "" {
		return nil, errNoID
	}
	return message(s.book.Get(r.GetOrderId())), nil
}

// errNoID is answered when the order id is empty. With the lock in front the
// interceptor answers it first (LockKey refuses an empty id); this covers a
// server without the lock.
var errNoID = status.Error(codes.InvalidArgument, "order_id is required")

// amount is a request's amount in cents: 0 (unset) is orders.DefaultAmount,
// as for the HTTP routes without ?amount=.
func amount(id string, cents int64) (int64, error) {
	switch {
	case id == "":
		return 0, errNoID
	case cents == 0:
		return orders.DefaultAmount, nil
	case cents < 0:
		return 0, status.Errorf(codes.InvalidArgument, "amount_cents must be > 0, got %d", cents)
	}
	return cents, nil
}

// statusOf maps the book's errors to gRPC codes, as orders.HTTPStatus does
// to HTTP statuses.
func statusOf(err error) error {
	switch {
	case errors.Is(err, orders.ErrBadAmount), errors.Is(err, orders.ErrOverflow):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, orders.ErrNotPaid), errors.Is(err, orders.ErrAlreadyShipped):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, orders.ErrStaleToken):
		// A sequencer check failed: the code gRPC documents for it.
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	// The lock was lost (core.ErrLost; grpclock answers Aborted for it) or similar.
	return status.Error(codes.Unavailable, err.Error())
}

func message(o orders.Order) *ordersv1.Order {
	return &ordersv1.Order{
		Id: o.ID, BalanceCents: o.Balance, Payments: int64(o.Payments), Refunds: int64(o.Refunds),
		Shipped: o.Shipped, Token: o.Token,
	}
}
