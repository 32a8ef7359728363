package ordersv1

import "github.com/lockkit/lockkit/core"

// LockKey is order:<order_id>, the key grpclock locks PayOrder under by
// default, and the key the HTTP examples build for /orders/:id. An empty
// order id is an error (the call is answered InvalidArgument), never a
// shared key.
func (r *PayOrderRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}

// LockKey is order:<order_id>: a refund excludes a payment of the same order.
func (r *RefundOrderRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}

// LockKey is order:<order_id>: shipping excludes payments and refunds.
func (r *ShipOrderRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}

// LockKey is order:<order_id>. grpclock.FromFirstMessage keys ImportLines
// by its first message's, so the whole upload holds the order's lock.
func (r *ImportLinesRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}

// LockKey is order:<order_id>: the request is the stream's first (and only)
// received message, which grpclock.FromFirstMessage keys ExportLines by.
func (r *ExportLinesRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}
