package grpclock

import "strings"

// lockName is the lock's telemetry name (core.Name) for a call's full
// method: "orders.v1.Orders/PayOrder" for "/orders.v1.Orders/PayOrder",
// the leading slash dropped, as otelgrpc names the server span and writes
// rpc.method. Lock metrics and spans then join the RPC's on one value.
func lockName(fullMethod string) string { return strings.TrimPrefix(fullMethod, "/") }
