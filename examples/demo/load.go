package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
)

// outcome is how a request ended, seen by the client.
type outcome uint8

const (
	outOK      outcome = iota
	outBusy            // the lock was held: 409 with Retry-After / Aborted with RetryInfo
	outRefused         // the order's rules said no: 409 without Retry-After / FailedPrecondition
	outOther           // anything else: should not happen
	nOutcomes
)

// op is what a request asks of an order.
type op uint8

const (
	opPay op = iota
	opRefund
	opShip
	opImport // ImportLines: gRPC only, a client stream
	opExport // ExportLines: gRPC only, a server stream
	nOps
)

var opPaths = [...]string{opPay: "pay", opRefund: "refund", opShip: "ship", opImport: "ImportLines", opExport: "ExportLines"}

// stream reports whether o is a streaming RPC, which only the gRPC replica
// serves.
func (o op) stream() bool { return o == opImport || o == opExport }

// request is one request of a client.
type request struct {
	op    op
	id    string
	cents int64 // pay, refund: the amount
	lines int   // import: how many lines
}

// target sends requests to one replica.
type target interface {
	do(ctx context.Context, r request) (outcome, error)
	streams() bool // whether it serves the streaming ops
	close()
}

// httpTarget is a client of the gin or echo replica.
type httpTarget struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

func newHTTPTarget(addr string, conns int) *httpTarget {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: 30 * time.Second}
	return &httpTarget{base: "http://" + addr, tr: tr, hc: &http.Client{Transport: tr}}
}

func (t *httpTarget) streams() bool { return false }

func (t *httpTarget) do(ctx context.Context, r request) (outcome, error) {
	o := r.op
	if o.stream() {
		return outOther, fmt.Errorf("%s: not served over HTTP", opPaths[o])
	}
	url := t.base + "/orders/" + r.id + "/" + opPaths[o]
	if o != opShip {
		url += "?amount=" + strconv.FormatInt(r.cents, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return outOther, err
	}
	res, err := t.hc.Do(req)
	if err != nil {
		return outOther, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	switch {
	case res.StatusCode == http.StatusOK:
		return outOK, nil
	case res.StatusCode == http.StatusConflict && res.Header.Get("Retry-After") != "":
		return outBusy, nil
	case res.StatusCode == http.StatusConflict:
		return outRefused, nil
	}
	return outOther, fmt.Errorf("%s %s: %s", opPaths[o], res.Status, body)
}

func (t *httpTarget) close() { t.tr.CloseIdleConnections() }

// grpcTarget is a client of the gRPC replica.
type grpcTarget struct {
	conn *grpc.ClientConn
	cl   ordersv1.OrdersClient
}

func newGRPCTarget(addr string) (*grpcTarget, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &grpcTarget{conn: conn, cl: ordersv1.NewOrdersClient(conn)}, nil
}

func (t *grpcTarget) streams() bool { return true }

func (t *grpcTarget) do(ctx context.Context, r request) (outcome, error) {
	var err error
	o, id := r.op, r.id
	switch o {
	case opPay:
		_, err = t.cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: id, AmountCents: r.cents})
	case opRefund:
		_, err = t.cl.RefundOrder(ctx, &ordersv1.RefundOrderRequest{OrderId: id, AmountCents: r.cents})
	case opShip:
		_, err = t.cl.ShipOrder(ctx, &ordersv1.ShipOrderRequest{OrderId: id})
	case opImport:
		err = t.importLines(ctx, id, r.lines)
	case opExport:
		err = t.exportLines(ctx, id)
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.OK:
		return outOK, nil
	case codes.Aborted:
		// The lock's Aborted carries a retry hint; the book's (a stale
		// fencing token) does not.
		for _, d := range st.Details() {
			if _, ok := d.(*errdetails.RetryInfo); ok {
				return outBusy, nil
			}
		}
		return outRefused, nil
	case codes.FailedPrecondition:
		return outRefused, nil
	}
	return outOther, fmt.Errorf("%s: %w", opPaths[o], err)
}

// importLines uploads n lines into order id, one message each.
func (t *grpcTarget) importLines(ctx context.Context, id string, n int) error {
	s, err := t.cl.ImportLines(ctx)
	if err != nil {
		return err
	}
	for i := range n {
		l := &ordersv1.LineItem{Sku: "sku-" + strconv.Itoa(i+1), Quantity: int64(1 + i%3), UnitCents: 100 * int64(1+i%5)}
		if err := s.Send(&ordersv1.ImportLinesRequest{OrderId: id, Line: l}); err != nil {
			break // the server ended the call (io.EOF): CloseAndRecv says how
		}
	}
	_, err = s.CloseAndRecv()
	return err
}

// exportLines reads order id's lines to the end.
func (t *grpcTarget) exportLines(ctx context.Context, id string) error {
	s, err := t.cl.ExportLines(ctx, &ordersv1.ExportLinesRequest{OrderId: id})
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func (t *grpcTarget) close() { _ = t.conn.Close() }

// tally counts one replica's requests by outcome, and by op.
type tally struct {
	n      [nOutcomes]atomic.Int64
	ops    [nOps]atomic.Int64
	mu     sync.Mutex
	errors []string // the first few "other" answers
}

func (t *tally) add(o op, oc outcome, err error) {
	t.ops[o].Add(1)
	t.n[oc].Add(1)
	if err != nil {
		t.mu.Lock()
		if len(t.errors) < 3 {
			t.errors = append(t.errors, err.Error())
		}
		t.mu.Unlock()
	}
}

func (t *tally) counts() (c [nOutcomes]int) {
	for i := range c {
		c[i] = int(t.n[i].Load())
	}
	return c
}

func (t *tally) opCounts() (c [nOps]int) {
	for i := range c {
		c[i] = int(t.ops[i].Load())
	}
	return c
}

func sum(c [nOutcomes]int) (n int) {
	for _, v := range c {
		n += v
	}
	return n
}

// The traffic: half the requests go to the few hot orders, the rest spread
// over the cold ones; payments outnumber refunds so balances grow; some
// requests ship (the no-wait route); a few import line items (2 to 5, each
// a write: the stream holds the order for all of them) or export them,
// over gRPC, to the same orders.
const hotShare = 0.5

func (cfg config) pick(rng *rand.Rand) request {
	r := request{id: "c" + strconv.Itoa(1+rng.IntN(cfg.orders))}
	if cfg.hot > 0 && rng.Float64() < hotShare {
		r.id = "h" + strconv.Itoa(1+rng.IntN(cfg.hot))
	}
	switch p := rng.IntN(100); {
	case p < 48:
		r.op, r.cents = opPay, 100*int64(1+rng.IntN(5))
	case p < 81:
		r.op, r.cents = opRefund, 100*int64(1+rng.IntN(3))
	case p < 94:
		r.op = opShip
	case p < 97:
		r.op, r.lines = opImport, 2+rng.IntN(4)
	default:
		r.op = opExport
	}
	return r
}

// drive sends requests from cfg.concurrency clients for cfg.duration,
// each client turning over the replicas in turn (a stream goes to the next
// replica that serves streams: the gRPC one), and prints a progress line
// every half second. Requests in flight at the end are finished, not cut.
func drive(ctx context.Context, cfg config, targets []target, tallies []*tally, out io.Writer) time.Duration {
	start := time.Now()
	end := start.Add(cfg.duration)
	var wg sync.WaitGroup
	for w := range cfg.concurrency {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(w)))
			for i := w; time.Now().Before(end) && ctx.Err() == nil; i++ {
				r := cfg.pick(rng)
				k := i % len(targets)
				for j := 0; r.op.stream() && !targets[k].streams() && j < len(targets); j++ {
					k = (k + 1) % len(targets)
				}
				// A request's deadline is well past its wait budget: it
				// should never be what ends it.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.wait+10*time.Second)
				oc, err := targets[k].do(rctx, r)
				cancel()
				tallies[k].add(r.op, oc, err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			elapsed := time.Since(start)
			progress(out, "done", elapsed, tallies)
			return elapsed
		case <-tick.C:
			progress(out, "", time.Since(start), tallies)
		}
	}
}

func progress(out io.Writer, label string, elapsed time.Duration, tallies []*tally) {
	var c [nOutcomes]int
	for _, t := range tallies {
		for i, v := range t.counts() {
			c[i] += v
		}
	}
	fmt.Fprintf(out, "  %4s %5.1fs %7d requests   ok %-6d busy %-5d refused %-5d other %d\n",
		label, elapsed.Seconds(), sum(c), c[outOK], c[outBusy], c[outRefused], c[outOther])
}
