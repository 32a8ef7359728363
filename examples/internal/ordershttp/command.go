package ordershttp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
	"github.com/lockkit/lockkit/examples/internal/serve"
)

// Command is the main of an HTTP example of the orders service: its flags,
// the lock client on REDIS_URL or -redis (or an embedded miniredis), the
// Banner of the routes, and the router served until SIGINT or SIGTERM. Only
// the name, the default address and the router differ between gin and echo.
type Command struct {
	Name      string                    // "gin": the flag set's, the banner's and the error's
	Addr      string                    // default listen address ($ADDR overrides it, -addr both)
	NewRouter func(Config) http.Handler // ordersgin.NewRouter, ordersecho.NewRouter
}

// Main runs the command on the process's arguments and environment; it
// exits 1 on an error.
func (c Command) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, c.Name+" example:", err)
		os.Exit(1)
	}
}

// Run is Main with its inputs passed in (the tests call it): it serves
// until ctx ends and writes "listening on http://<addr>" to out once it
// listens. It prints nothing when it cannot listen or reach its Redis.
func (c Command) Run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	addr := serve.AddrFlag(fs, getenv, c.Addr)
	redisURL := embedded.URLFlag(fs, getenv)
	work := fs.Duration("work", 20*time.Millisecond, "time each order write takes (a slow database)")
	noLock := fs.Bool("nolock", false, "serve without the lock middleware (to watch updates get lost)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Listen first: nothing is printed for a service that cannot listen.
	ln, err := serve.Listen(*addr)
	if err != nil {
		return err
	}
	rdb, err := embedded.Open(ctx, redisURL())
	if err != nil {
		ln.Close()
		return err
	}
	defer rdb.Close()
	// Telemetry from the standard OTEL_* variables (none unless one is
	// set): a server span per request, the lock's spans under it.
	tel, err := otelsetup.Setup(ctx, otelsetup.ServiceName("lockkit-"+c.Name+"-example"))
	if err != nil {
		ln.Close()
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	inst := tel.Instruments("")
	client, err := core.New(rdb.Client, core.WithObserver(otelsetup.LockObserver(inst))) // none when inst is off
	if err != nil {
		ln.Close()
		return err
	}
	defer client.Close()
	fmt.Fprintf(out, "orders (%s): locks on %s\n", c.Name, rdb.Desc)
	if b := tel.Banner(); b != "" {
		fmt.Fprintln(out, b)
	}
	Banner(out, *noLock)
	book := orders.Traced(orders.NewStore(*work), inst.TracerProvider)
	h := c.NewRouter(Config{Client: client, Book: book, NoLock: *noLock, Log: out, Telemetry: inst})
	return serve.Run(ctx, ln, h, out)
}
