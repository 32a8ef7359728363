package rpckey

import "strings"

// Name is the lock's telemetry name (core.Request.Name) for an RPC's
// procedure: "orders.v1.Orders/PayOrder" for "/orders.v1.Orders/PayOrder",
// the leading slash dropped, as otelgrpc and otelconnect name the server
// span, so that lock metrics and spans join the RPC's on one value. It is
// also otelgrpc's rpc.method (its default conventions); otelconnect writes
// rpc.service "orders.v1.Orders" and rpc.method "PayOrder" apart.
func Name(procedure string) string { return strings.TrimPrefix(procedure, "/") }
