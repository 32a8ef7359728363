package main

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
)

// orders is the example's tiny order book. Its mutex only keeps memory
// safe: a payment reads the order, calls the (slow) payment provider and
// then writes, so without the distributed lock two concurrent PayOrder
// calls — on this replica, another one, or over HTTP — would both find the
// order open and charge twice. grpclock holds order:<id> around each call.
type orders struct {
	ordersv1.UnimplementedOrdersServer
	provider time.Duration // how long the payment provider takes

	mu   sync.Mutex
	byID map[string]*ordersv1.Order
}

func newOrders(provider time.Duration) *orders {
	return &orders{provider: provider, byID: map[string]*ordersv1.Order{}}
}

func (s *orders) load(id string) *ordersv1.Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.byID[id]
	if !ok {
		return &ordersv1.Order{Id: id, Status: ordersv1.OrderStatus_ORDER_STATUS_OPEN}
	}
	return &ordersv1.Order{Id: o.Id, Status: o.Status, PaidCents: o.PaidCents, Charges: o.Charges}
}

func (s *orders) store(o *ordersv1.Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[o.Id] = o
}

// callProvider stands for the payment provider's API.
func (s *orders) callProvider(ctx context.Context) error {
	select {
	case <-time.After(s.provider):
		return nil
	case <-ctx.Done(): // the call ended, or the lock was lost (cause core.ErrLost)
		return status.FromContextError(ctx.Err()).Err()
	}
}

// token is the lock's fencing token; a real service passes it to its
// database so a write from a holder that lost the lock is refused.
func token(ctx context.Context) int64 {
	if l, ok := core.LeaseFromContext(ctx); ok {
		return l.Token()
	}
	return 0
}

func (s *orders) PayOrder(ctx context.Context, r *ordersv1.PayOrderRequest) (*ordersv1.PayOrderResponse, error) {
	if r.GetAmountCents() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "amount_cents must be > 0")
	}
	o := s.load(r.GetOrderId())
	if o.Status != ordersv1.OrderStatus_ORDER_STATUS_OPEN {
		return nil, status.Errorf(codes.FailedPrecondition, "order %s is %s", o.Id, o.Status)
	}
	if err := s.callProvider(ctx); err != nil {
		return nil, err
	}
	o.Status, o.PaidCents, o.Charges = ordersv1.OrderStatus_ORDER_STATUS_PAID, r.GetAmountCents(), o.Charges+1
	s.store(o)
	return &ordersv1.PayOrderResponse{Order: o, FencingToken: token(ctx)}, nil
}

func (s *orders) RefundOrder(ctx context.Context, r *ordersv1.RefundOrderRequest) (*ordersv1.RefundOrderResponse, error) {
	o := s.load(r.GetOrderId())
	if o.Status != ordersv1.OrderStatus_ORDER_STATUS_PAID {
		return nil, status.Errorf(codes.FailedPrecondition, "order %s is %s", o.Id, o.Status)
	}
	if err := s.callProvider(ctx); err != nil {
		return nil, err
	}
	o.Status = ordersv1.OrderStatus_ORDER_STATUS_REFUNDED
	s.store(o)
	return &ordersv1.RefundOrderResponse{Order: o, FencingToken: token(ctx)}, nil
}

func (s *orders) GetOrder(_ context.Context, r *ordersv1.GetOrderRequest) (*ordersv1.Order, error) {
	if r.GetOrderId() == "" {
		return nil, status.Error(codes.InvalidArgument, "order_id is required")
	}
	return s.load(r.GetOrderId()), nil
}
