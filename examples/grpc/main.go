// Command grpc is the orders service of lockkit's examples over gRPC
// (orders.v1.Orders): the order book the gin and echo examples serve over
// HTTP (examples/internal/orders), with PayOrder, RefundOrder and ShipOrder
// under the distributed lock order:<order_id> — the key the HTTP examples
// take for /orders/:id — on the Redis of REDIS_URL (or -redis) or, when
// unset, an embedded miniredis. Each write is fenced with the lock's token.
// Two streams hold that lock for their whole life, keyed by their first
// message (grpclock.StreamServerInterceptor with FromFirstMessage):
// ImportLines, a client stream of line items into one order, and
// ExportLines, a server stream of an order's lines.
//
//	go -C examples run ./grpc                      # listens on 127.0.0.1:50051
//	grpcurl -plaintext -d '{"order_id":"42","amount_cents":1000}' 127.0.0.1:50051 orders.v1.Orders/PayOrder
//	grpcurl -plaintext -d '{"order_id":"42","line":{"sku":"tea","quantity":2,"unit_cents":450}}
//	  {"order_id":"42","line":{"sku":"cup","quantity":1,"unit_cents":900}}' 127.0.0.1:50051 orders.v1.Orders/ImportLines
//	grpcurl -plaintext -d '{"order_id":"42"}' 127.0.0.1:50051 orders.v1.Orders/ExportLines
//	REDIS_URL=redis://127.0.0.1:6379 ADDR=127.0.0.1:50052 go -C examples run ./grpc
//
// As in every example, ADDR is the listen address and REDIS_URL the Redis;
// the flags -addr and -redis override them.
//
// Telemetry follows the standard OpenTelemetry variables, as in every
// example (see otelsetup; nothing is exported unless one is set):
// OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 sends a server span
// per call with the lock's spans under it, and the lock's metrics.
//
// Server reflection is on, so grpcurl needs no .proto file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordersgrpc"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
	"github.com/lockkit/lockkit/examples/internal/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grpc example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("grpc", flag.ContinueOnError)
	addr := serve.AddrFlag(fs, getenv, "127.0.0.1:50051")
	redisURL := embedded.URLFlag(fs, getenv)
	work := fs.Duration("work", 20*time.Millisecond, "time each order write takes (a slow database)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Listen first: nothing is printed for a service that cannot listen.
	lis, err := serve.Listen(*addr)
	if err != nil {
		return err
	}
	return serveOrders(ctx, lis, redisURL(), *work, out)
}

// serveOrders runs the service on lis until ctx ends, its locks on the Redis at
// redisURL ("": embedded). work is how long each order write takes.
func serveOrders(ctx context.Context, lis net.Listener, redisURL string, work time.Duration, out io.Writer) error {
	rdb, err := embedded.Open(ctx, redisURL)
	if err != nil {
		lis.Close()
		return err
	}
	defer rdb.Close()
	// Telemetry from the standard OTEL_* variables (none unless one is
	// set): a server span per call, the lock's spans under it.
	tel, err := otelsetup.Setup(ctx, otelsetup.ServiceName("lockkit-grpc-example"))
	if err != nil {
		lis.Close()
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	inst := tel.Instruments("")
	client, err := core.New(rdb.Client, core.WithObserver(otelsetup.LockObserver(inst))) // none when inst is off
	if err != nil {
		lis.Close()
		return err
	}
	defer client.Close()

	book := orders.Traced(orders.NewStore(work), inst.TracerProvider)
	s := ordersgrpc.NewServer(ordersgrpc.Config{Client: client, Book: book, Telemetry: inst})
	fmt.Fprintf(out, "orders (gRPC) listening on %s (locks on %s)\n", lis.Addr(), rdb.Desc)
	if b := tel.Banner(); b != "" {
		fmt.Fprintln(out, b)
	}
	fmt.Fprintln(out, "  PayOrder, RefundOrder  lock order:<order_id> (wait)")
	fmt.Fprintln(out, "  ShipOrder              lock order:<order_id> (no wait: ABORTED when busy)")
	fmt.Fprintln(out, "  ImportLines (client stream), ExportLines (server stream)")
	fmt.Fprintln(out, "                         lock order:<order_id> of the first message (wait), held until the stream ends")
	fmt.Fprintln(out, "  GetOrder               no lock")
	fmt.Fprintf(out, "try: grpcurl -plaintext -d '{\"order_id\":\"42\",\"amount_cents\":1000}' %s orders.v1.Orders/PayOrder\n", lis.Addr())
	return ordersgrpc.Serve(ctx, s, lis)
}
