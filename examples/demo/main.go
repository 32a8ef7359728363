// Command demo shows lockkit in front of a service, on a fresh machine with
// nothing installed: the orders service of the examples runs as four
// replicas — one on gin, one on echo, one on fiber (fasthttp), one on
// gRPC — each with its own lock client on one Redis (an embedded miniredis
// unless REDIS_URL or -redis names one), sharing the order book as
// replicas share a database. Every route and RPC that changes order <id>
// locks order:<id>, whatever serves it.
//
//	go -C examples run ./demo
//	REDIS_URL=redis://127.0.0.1:6379/0 go -C examples run ./demo -duration 10s
//	REDIS_URL='redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379' go -C examples run ./demo   # a Redis Cluster
//	REDIS_URL='redis://10.0.0.1:26379?master_name=orders&addr=10.0.0.2:26379' go -C examples run ./demo # a Sentinel group
//	go -C examples run ./demo -nolock     # the same traffic without the lock: the witness fails
//
// For a few seconds (or, with -each N, until every replica has answered
// every kind of request N times) many clients pay, refund and ship a few hot orders and
// many cold ones over all four replicas (pay and refund wait for the lock,
// ship does not: 409 / Aborted while the order is busy), and now and then
// import line items into the same orders or export them over the gRPC
// replica's streams (ImportLines, ExportLines), which hold order:<id> from
// their first message to their end, with a progress line every half
// second. Then it prints, per replica and outcome, the requests; from an
// Observer on each lock client, the lock wait (p50, p99, max) and hold
// time; the hottest keys; the fencing tokens the hottest order's writes
// carried, in order; and a witness that watched from inside the handlers:
// no lost update or double payment, no two holders of one order at once,
// no write with a stale token accepted, nothing (no pay, refund, ship or
// other stream) inside an import or export of its order.
//
// As in every example, REDIS_URL is the Redis and -redis overrides it, in
// any of go-redis's URL forms: one server, a Redis Cluster (addr= for more
// nodes, or cluster=true with one), or the master of a Sentinel group
// (master_name=); see embedded.Target. The same binary moves from one Redis
// to a cluster by its URL alone. The replicas listen on loopback ports of
// the demo's choosing (no ADDR).
//
// Telemetry follows the standard OpenTelemetry variables (see otelsetup):
// nothing is exported unless one is set. OTEL_EXPORTER_OTLP_ENDPOINT sends
// spans and metrics over OTLP (OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC);
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT alone sends spans only (a traces-only
// backend such as Jaeger); OTEL_METRICS_EXPORTER=prometheus serves the
// metrics of all four replicas on one endpoint while the demo runs
// (OTEL_EXPORTER_PROMETHEUS_HOST and _PORT, default localhost:9464);
// OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER also take none and
// console. service.name is lockkit-demo unless OTEL_SERVICE_NAME says
// otherwise. A failing export is a warning on stderr, never the exit
// status.
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go -C examples run ./demo
//	OTEL_METRICS_EXPORTER=prometheus go -C examples run ./demo -duration 1m
//
// While it runs, the demo serves each replica's live lock view (package
// lockview: the locks it holds and waits for, its hottest keys, its losses
// and Redis errors) on a loopback port and prints the URL; -lockview
// chooses the address ("" for none).
//
// Exit status: 0 when the witness holds, 1 when it fails, 2 when the demo
// could not run (bad flag, Redis unreachable).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockkit/lockkit/examples/internal/embedded"
)

// Exit statuses.
const (
	exitOK      = 0
	exitWitness = 1 // the witness failed
	exitError   = 2 // the demo could not run
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the demo's flags.
type config struct {
	duration    time.Duration
	each        int // after duration, until every replica answered every kind of request this many times
	concurrency int
	orders, hot int
	work, wait  time.Duration
	redisURL    string
	noLock      bool
	noIdem      bool   // pay without its idempotency: retried payments apply twice
	lockView    string // address of the lock view's debug server ("": none)
	hooks       hooks  // the tests'
}

// maxDuration bounds a run: the demo is a demo.
const maxDuration = 5 * time.Minute

func parse(args []string, getenv func(string) string, errOut io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long the clients send requests (at most 5m)")
	fs.IntVar(&cfg.each, "each", 0, "then go on until every replica has answered every kind of request it serves, a retried payment included, this many times (at most 5m in all)")
	fs.IntVar(&cfg.concurrency, "concurrency", 24, "clients sending requests at once")
	fs.IntVar(&cfg.orders, "orders", 200, "cold orders (each gets few requests)")
	fs.IntVar(&cfg.hot, "hot", 3, "hot orders (together they get half the requests)")
	fs.DurationVar(&cfg.work, "work", 2*time.Millisecond, "time each order write takes between its read and its write (a slow database)")
	fs.DurationVar(&cfg.wait, "wait", 3*time.Second, "how long pay and refund wait for a busy order before 409 / Aborted")
	redisURL := embedded.URLFlag(fs, getenv)
	fs.StringVar(&cfg.lockView, "lockview", "127.0.0.1:0", "address to serve each replica's live lock view on while the demo runs (empty: none)")
	fs.BoolVar(&cfg.noLock, "nolock", false, "serve without the lock middleware, to watch the witness fail (pay keeps its idempotency)")
	fs.BoolVar(&cfg.noIdem, "noidem", false, "serve pay without its idempotency, to watch retried payments applied twice and the witness fail")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: demo [flags]   (exit status 0: the witness holds, 1: it failed, 2: error)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.redisURL = redisURL()
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.duration <= 0 || cfg.duration > maxDuration:
		return cfg, fmt.Errorf("-duration must be in (0, %v], got %v", maxDuration, cfg.duration)
	case cfg.each < 0 || cfg.each > 100_000:
		return cfg, fmt.Errorf("-each must be in [0, 100000], got %d", cfg.each)
	case cfg.concurrency < 1 || cfg.concurrency > 1024:
		return cfg, fmt.Errorf("-concurrency must be in [1, 1024], got %d", cfg.concurrency)
	case cfg.orders < 1:
		return cfg, fmt.Errorf("-orders must be >= 1, got %d", cfg.orders)
	case cfg.hot < 0 || cfg.hot > 1000:
		return cfg, fmt.Errorf("-hot must be in [0, 1000], got %d", cfg.hot)
	case cfg.work < 0 || cfg.work > time.Second:
		return cfg, fmt.Errorf("-work must be in [0, 1s], got %v", cfg.work)
	case cfg.wait <= 0 || cfg.wait > time.Minute:
		return cfg, fmt.Errorf("-wait must be in (0, 1m], got %v", cfg.wait)
	}
	return cfg, nil
}

// run is the demo with its inputs passed in (the tests call it) and its exit
// status returned.
func run(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	cfg, err := parse(args, getenv, errOut)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(errOut, "demo:", err)
		return exitError
	}
	res, err := scenario(ctx, cfg, out, errOut)
	if err != nil {
		fmt.Fprintln(errOut, "demo:", err)
		return exitError
	}
	report(out, res)
	return exitCode(res)
}

// exitCode is 0 only when the witness holds.
func exitCode(res *result) int {
	if res.verdict.holds() {
		return exitOK
	}
	return exitWitness
}
