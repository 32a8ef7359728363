// Command echo is the orders service of lockkit's examples on echo v5, with
// echo5lock: every route that touches order <id> runs under the lock
// "order:<id>" across all replicas, and each write is fenced with the
// lock's token; it prints every route with its lock when it starts.
// (echo v4 gets bug fixes until 2026-12-31 and security fixes until
// 2027-12-31; a v4 service takes echolock, configured the same way.)
//
//	go -C examples run ./echo    # embedded Redis (miniredis), on 127.0.0.1:8081
//	REDIS_URL=redis://127.0.0.1:6379 ADDR=127.0.0.1:9090 go -C examples run ./echo
//	go -C examples run ./echo -redis redis://127.0.0.1:6379 -addr 127.0.0.1:9091
//
// As in every example, ADDR is the listen address and REDIS_URL the Redis;
// the flags -addr and -redis override them. Start two on the same Redis
// (different addresses) to see two replicas exclude each other; add -nolock
// to see concurrent payments lose updates.
//
// Telemetry follows the standard OpenTelemetry variables, as in every
// example (see otelsetup; nothing is exported unless one is set):
// OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 sends a server span
// per request with the lock's spans under it, and the lock's metrics.
//
// The routes are examples/internal/ordersecho (the demo's echo replica
// serves them too); the flags and the rest of main are ordershttp.Command,
// which the gin example shares.
package main

import (
	"github.com/lockkit/lockkit/examples/internal/ordersecho"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
)

// command is this example: the echo router on 127.0.0.1:8081 by default.
var command = ordershttp.Command{Name: "echo", Addr: "127.0.0.1:8081", NewRouter: ordersecho.NewRouter}

func main() { command.Main() }
