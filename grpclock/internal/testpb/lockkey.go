package testpb

import "github.com/lockkit/lockkit/core"

// LockKey makes KeyedRequest carry its own lock key, order:<id>, the same
// key the HTTP adapters build for /orders/:id.
func (r *KeyedRequest) LockKey() (string, error) {
	return core.JoinKey("order", r.GetOrderId())
}
