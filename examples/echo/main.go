// Command echo is the orders service of lockkit's examples on echo (v4): every
// route that touches order <id> runs under the lock "order:<id>" across all
// replicas, a tenant's export under "tenant:<X-Tenant>", and each write is
// fenced with the lock's token.
//
//	go run ./examples/echo                     # embedded Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379 go run ./examples/echo -addr 127.0.0.1:8081
//
// Start two on the same REDIS_URL (different -addr) to see two replicas
// exclude each other; add -nolock to see concurrent payments lose updates.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "echo example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	addr := fs.String("addr", serve.Addr(getenv, "127.0.0.1:8081"), "listen address (env ADDR)")
	work := fs.Duration("work", 20*time.Millisecond, "time each order write takes (a slow database)")
	noLock := fs.Bool("nolock", false, "serve without the lock middleware (to watch updates get lost)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb, err := embedded.Open(ctx, getenv(embedded.EnvURL))
	if err != nil {
		return err
	}
	defer rdb.Close()
	client, err := core.New(rdb.Client)
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(out, "orders (echo): locks on %s\n", rdb.Desc)
	fmt.Fprintln(out, "  POST /orders/:id/pay|refund  lock order:<id> (wait), Lock-Token header = fencing token")
	fmt.Fprintln(out, "  POST /orders/:id/ship        lock order:<id> (no wait: 409 when busy)")
	fmt.Fprintln(out, "  POST /tenant/export          lock tenant:<X-Tenant header> (400 without it)")
	fmt.Fprintln(out, "  GET  /orders/:id             no lock")
	return serve.Run(ctx, *addr, newRouter(client, orders.NewStore(*work), !*noLock, out), out)
}
