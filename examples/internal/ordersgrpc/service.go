// Package ordersgrpc serves the examples' order book (examples/internal/orders)
// over gRPC as orders.v1.Orders, with the calls that change an order under
// the lock order:<order_id>: the key the gin and echo examples build for
// /orders/:id, so all of them exclude each other. Its two streams,
// ImportLines and ExportLines, hold that lock from their first message to
// their end (grpclock.StreamServerInterceptor with FromFirstMessage). The
// gRPC example and the demo both run this server.
package ordersgrpc

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/guard/rpckey"
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
// book refuses a write with a token older than the order's last. An
// idempotency claim is a lease too, but no lock: its token is not one.
func token(ctx context.Context) int64 {
	l, ok := core.LeaseFromContext(ctx)
	if !ok {
		return 0
	}
	if c, ok := core.ClaimFromContext(ctx); ok && c == l {
		return 0
	}
	return l.Token()
}

// PayOrder adds the amount to the order's balance.
func (s *Service) PayOrder(ctx context.Context, r *ordersv1.PayOrderRequest) (*ordersv1.PayOrderResponse, error) {
	cents, err := amount(r.GetOrderId(), r.GetAmountCents())
	if err != nil {
		return nil, err
	}
	// ctx ends if the caller leaves or the lock is lost (cause core.ErrLost).
	o, err := s.book.Pay(orders.WithPayment(ctx, paymentRef(ctx)), r.GetOrderId(), token(ctx), cents)
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

// ImportLines adds the streamed lines to the order the first message names.
// With the lock in front (grpclock.FromFirstMessage) the first Recv takes
// order:<id> and the handler holds it until it returns: the whole upload.
func (s *Service) ImportLines(stream grpc.ClientStreamingServer[ordersv1.ImportLinesRequest, ordersv1.ImportLinesResponse]) error {
	first, err := stream.Recv()
	switch {
	case errors.Is(err, io.EOF):
		return status.Error(codes.InvalidArgument, "an import needs at least one message: its order_id names the order")
	case err != nil:
		return err // the lock's refusal (Aborted, Unavailable, ...) or a broken stream
	case first.GetOrderId() == "":
		return errNoID
	}
	// The lease is in the stream's context from the first Recv on.
	ctx := stream.Context()
	id, tok := first.GetOrderId(), token(ctx)
	o, n, err := s.book.Import(ctx, id, tok, func(yield func(orders.Line, error) bool) {
		for m := first; ; {
			if m.GetOrderId() != id {
				yield(orders.Line{}, status.Errorf(codes.InvalidArgument, "every message of an import names its first's order %q, got %q", id, m.GetOrderId()))
				return
			}
			if !yield(line(m.GetLine()), nil) {
				return
			}
			var err error
			if m, err = stream.Recv(); err != nil {
				if !errors.Is(err, io.EOF) {
					yield(orders.Line{}, err)
				}
				return
			}
		}
	})
	if err != nil {
		st := status.Convert(grpcError(err))
		return status.Errorf(st.Code(), "%s (lines imported before it: %d)", st.Message(), n)
	}
	return stream.SendAndClose(&ordersv1.ImportLinesResponse{Order: message(o), LinesImported: int64(n), FencingToken: tok})
}

// ExportLines streams the order's lines. With the lock in front
// (grpclock.FromFirstMessage on the request, the stream's one message) it
// holds order:<id> until the last line is sent or the client leaves.
func (s *Service) ExportLines(r *ordersv1.ExportLinesRequest, stream grpc.ServerStreamingServer[ordersv1.ExportLinesResponse]) error {
	if r.GetOrderId() == "" {
		return errNoID
	}
	ctx := stream.Context()
	tok, n := token(ctx), int64(0)
	_, err := s.book.ExportLines(ctx, r.GetOrderId(), func(l orders.Line) error {
		n++
		return stream.Send(&ordersv1.ExportLinesResponse{LineNo: n, Line: lineItem(l), FencingToken: tok})
	})
	return grpcError(err)
}

// grpcError is err as a status: the book's errors mapped by statusOf, a
// status (from the stream, or the lock's) kept.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return statusOf(err)
}

func line(l *ordersv1.LineItem) orders.Line {
	return orders.Line{SKU: l.GetSku(), Quantity: l.GetQuantity(), UnitCents: l.GetUnitCents()}
}

func lineItem(l orders.Line) *ordersv1.LineItem {
	return &ordersv1.LineItem{Sku: l.SKU, Quantity: l.Quantity, UnitCents: l.UnitCents}
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
	case errors.Is(err, orders.ErrBadAmount), errors.Is(err, orders.ErrOverflow), errors.Is(err, orders.ErrBadLine):
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
		Shipped: o.Shipped, Token: o.Token, Lines: int64(o.Lines), TotalCents: o.Total,
	}
}

// paymentRef is the call's idempotency key (metadata "idempotency-key"),
// the payment's reference for the book.
func paymentRef(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, rpckey.DefaultIdempotencyMetadata); len(v) > 0 {
		return v[0]
	}
	return ""
}
