package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
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
	opImport       // ImportLines: gRPC only, a client stream
	opExport       // ExportLines: gRPC only, a server stream
	opTransfer     // HTTP only: two orders locked together
	opTenantExport // HTTP only: a permit of the tenant's export semaphore
	opSettingsGet  // HTTP only: the read side of the tenant's settings lock
	opSettingsPut  // HTTP only: its write side
	nOps
)

var opPaths = [...]string{opPay: "pay", opRefund: "refund", opShip: "ship", opImport: "ImportLines", opExport: "ExportLines",
	opTransfer: "transfer", opTenantExport: "tenant export", opSettingsGet: "settings read", opSettingsPut: "settings write"}

// stream reports whether o is a streaming RPC, which only the gRPC replica
// serves.
func (o op) stream() bool { return o == opImport || o == opExport }

// httpOnly reports whether only the HTTP replicas serve o: the gRPC
// service has no transfer and no tenant routes.
func (o op) httpOnly() bool { return o >= opTransfer }

// request is one request of a client.
type request struct {
	op     op
	id     string
	to     string // transfer: the receiving order
	tenant string // tenant routes
	cents  int64  // pay, refund, transfer: the amount
	lines  int    // import: how many lines
	key    string // pay: the payment's idempotency key (its id), the same on every send
}

// reply is how a request ended, seen by the client, with what the
// idempotency of a payment added to it.
type reply struct {
	outcome
	replayed   bool          // the answer is a stored one: Idempotent-Replayed / idempotent-replayed
	inProgress bool          // busy because the payment runs elsewhere (409 / Aborted from the idempotency, not the lock)
	after      time.Duration // a busy answer's retry hint
}

// target sends requests to one replica.
type target interface {
	do(ctx context.Context, r request) (reply, error)
	serves(op) bool
	proto() string // "http", "grpc": a retried payment goes to another replica of its own
	close()
}

// httpTarget is a client of an HTTP replica (gin, echo, fiber).
type httpTarget struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

func newHTTPTarget(addr string, conns int) *httpTarget {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: 30 * time.Second}
	return &httpTarget{base: "http://" + addr, tr: tr, hc: &http.Client{Transport: tr}}
}

func (t *httpTarget) serves(o op) bool { return !o.stream() }

func (t *httpTarget) proto() string { return "http" }

func (t *httpTarget) do(ctx context.Context, r request) (reply, error) {
	o := r.op
	if o.stream() {
		return reply{outcome: outOther}, fmt.Errorf("%s: not served over HTTP", opPaths[o])
	}
	method, url := http.MethodPost, t.base+"/orders/"+r.id+"/"+opPaths[o]
	switch o {
	case opShip:
	case opTransfer:
		url = t.base + "/orders/" + r.id + "/transfer/" + r.to + "?amount=" + strconv.FormatInt(r.cents, 10)
	case opTenantExport:
		url = t.base + "/tenant/export"
	case opSettingsGet:
		method, url = http.MethodGet, t.base+"/tenant/settings"
	case opSettingsPut:
		method, url = http.MethodPut, t.base+"/tenant/settings?plan=p"+strconv.FormatInt(r.cents, 10)
	default:
		url += "?amount=" + strconv.FormatInt(r.cents, 10)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return reply{outcome: outOther}, err
	}
	if r.tenant != "" {
		req.Header.Set(ordershttp.TenantHeader, r.tenant)
	}
	if r.key != "" {
		req.Header.Set(ordershttp.IdempotencyHeader, r.key)
	}
	res, err := t.hc.Do(req)
	if err != nil {
		return reply{outcome: outOther}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	after := res.Header.Get("Retry-After")
	switch {
	case res.StatusCode == http.StatusOK:
		return reply{outcome: outOK, replayed: res.Header.Get(guard.HeaderIdempotentReplayed) == "true"}, nil
	case res.StatusCode == http.StatusConflict && after != "",
		res.StatusCode == http.StatusTooManyRequests && after != "": // the export limit
		secs, _ := strconv.Atoi(after)
		return reply{outcome: outBusy, inProgress: inProgress(string(body)), after: time.Duration(secs) * time.Second}, nil
	case res.StatusCode == http.StatusConflict:
		return reply{outcome: outRefused}, nil
	}
	return reply{outcome: outOther}, fmt.Errorf("%s %s: %s", opPaths[o], res.Status, body)
}

// inProgress reports whether a busy answer's message is the idempotency's
// (the payment's key runs elsewhere, or was taken over) rather than the
// lock's.
func inProgress(msg string) bool {
	return strings.Contains(msg, guard.ErrIdempotencyInProgress.Error()) || strings.Contains(msg, guard.ErrIdempotencyTakenOver.Error())
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

func (t *grpcTarget) serves(o op) bool { return !o.httpOnly() }

func (t *grpcTarget) proto() string { return "grpc" }

func (t *grpcTarget) do(ctx context.Context, r request) (reply, error) {
	var err error
	var header metadata.MD
	o, id := r.op, r.id
	switch o {
	case opPay:
		if r.key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, rpckey.DefaultIdempotencyMetadata, r.key)
		}
		_, err = t.cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: id, AmountCents: r.cents}, grpc.Header(&header))
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
		return reply{outcome: outOK, replayed: slices.Contains(header.Get(rpckey.MetadataIdempotentReplayed), "true")}, nil
	case codes.Aborted:
		// The lock's Aborted carries a retry hint, and so does the
		// idempotency's; the book's (a stale fencing token) does not.
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				return reply{outcome: outBusy, inProgress: inProgress(st.Message()), after: ri.GetRetryDelay().AsDuration()}, nil
			}
		}
		return reply{outcome: outRefused}, nil
	case codes.FailedPrecondition:
		return reply{outcome: outRefused}, nil
	}
	return reply{outcome: outOther}, fmt.Errorf("%s: %w", opPaths[o], err)
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
	n   [nOutcomes]atomic.Int64
	ops [nOps]atomic.Int64
	// replays are the ok answers that were a payment's stored answer,
	// inProgress the busy ones because its key ran elsewhere; retries the
	// payments sent here again after another replica (or this one) had
	// them.
	replays, inProgress, retries atomic.Int64
	mu                           sync.Mutex
	errors                       []string // the first few "other" answers
}

func (t *tally) add(o op, rp reply, err error) {
	t.ops[o].Add(1)
	t.n[rp.outcome].Add(1)
	if rp.replayed {
		t.replays.Add(1)
	}
	if rp.inProgress {
		t.inProgress.Add(1)
	}
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
// over gRPC, to the same orders; a few transfer between two orders, run a
// tenant's export (at most ExportLimit at once per tenant) or read and
// write its settings, over HTTP.
const hotShare = 0.5

func (cfg config) pick(rng *rand.Rand) request {
	r := request{id: cfg.orderID(rng)}
	switch p := rng.IntN(100); {
	case p < 44:
		r.op, r.cents = opPay, 100*int64(1+rng.IntN(5))
	case p < 73:
		r.op, r.cents = opRefund, 100*int64(1+rng.IntN(3))
	case p < 84:
		r.op = opShip
	case p < 87:
		r.op, r.lines = opImport, 2+rng.IntN(4)
	case p < 90:
		r.op = opExport
	case p < 93:
		// Between two orders, either way round: the lock takes both in
		// one order whichever is first, so opposite transfers never
		// deadlock.
		r.op, r.cents = opTransfer, 100*int64(1+rng.IntN(2))
		for r.to = cfg.orderID(rng); r.to == r.id; {
			r.to = "c" + strconv.Itoa(1+rng.IntN(cfg.orders)) // cold: with one order there would be no other
			if cfg.orders == 1 && r.id == r.to {
				r.to = "c0"
			}
		}
	case p < 95:
		r.op = opTenantExport
	case p < 99:
		r.op = opSettingsGet
	default:
		r.op, r.cents = opSettingsPut, int64(rng.IntN(3))
	}
	if r.op >= opTenantExport {
		r.id, r.tenant = "", "t"+strconv.Itoa(1+rng.IntN(tenants))
	}
	return r
}

// orderID picks an order: a hot one for hotShare of the picks.
func (cfg config) orderID(rng *rand.Rand) string {
	if cfg.hot > 0 && rng.Float64() < hotShare {
		return "h" + strconv.Itoa(1+rng.IntN(cfg.hot))
	}
	return "c" + strconv.Itoa(1+rng.IntN(cfg.orders))
}

// tenants is how many tenants the tenant routes are asked for: few, so
// their exports meet the limit and their settings readers meet.
const tenants = 2

// drive sends requests from cfg.concurrency clients for cfg.duration and
// then, with cfg.each, until every replica has answered every kind of
// request it serves cfg.each times (a loaded machine serves fewer in the
// same time: the run counts requests, not seconds), and while the tests'
// keepGoing hook asks for more; at most maxDuration in all. Each kind of
// request goes round the replicas that serve it (rotation), and a progress
// line is printed every half second. Payments carry idempotency keys and
// a share of them is sent twice (sender.pay). Requests in flight at the
// end are finished, not cut.
func drive(ctx context.Context, cfg config, targets []target, tallies []*tally, pays *ledger, out io.Writer) time.Duration {
	turns := newRotation(targets)
	start := time.Now()
	s := &sender{cfg: cfg, ctx: ctx, targets: targets, tallies: tallies, pays: pays}
	var enough atomic.Bool
	var wg sync.WaitGroup
	for w := range cfg.concurrency {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(w)))
			for !enough.Load() && ctx.Err() == nil {
				r := cfg.pick(rng)
				k := turns.next(r.op)
				if r.op == opPay {
					s.pay(rng, k, r)
				} else {
					s.send(k, r)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	check := time.NewTicker(50 * time.Millisecond)
	defer check.Stop()
	var askedAt time.Time
	for {
		select {
		case <-done:
			elapsed := time.Since(start)
			progress(out, "done", elapsed, tallies)
			return elapsed
		case <-tick.C:
			progress(out, "", time.Since(start), tallies)
		case now := <-check.C:
			switch {
			case enough.Load():
			case now.Sub(start) >= maxDuration:
				enough.Store(true)
			case now.Sub(start) < cfg.duration || len(missing(cfg.each, targets, tallies)) > 0:
			case cfg.hooks.keepGoing == nil:
				enough.Store(true)
			case now.Sub(askedAt) >= 250*time.Millisecond: // the hook may ask a server
				askedAt = now
				enough.Store(!cfg.hooks.keepGoing())
			}
		}
	}
}

// rotation sends each kind of request to the replicas that serve it in
// turn, whichever client sends it: the HTTP-only kinds go round the HTTP
// replicas, the streams to the gRPC one, the rest round all of them. So
// every replica gets its share of each kind it serves, the rare ones
// included, and -each is met once the rarest kind has been sent each
// times per replica that serves it.
type rotation struct {
	servers [nOps][]int // the targets that serve each op
	turn    [nOps]atomic.Uint64
}

func newRotation(targets []target) *rotation {
	r := &rotation{}
	for o := range nOps {
		for k, t := range targets {
			if t.serves(o) {
				r.servers[o] = append(r.servers[o], k)
			}
		}
	}
	return r
}

// next is the target of the next request of kind o.
func (r *rotation) next(o op) int {
	s := r.servers[o]
	return s[(r.turn[o].Add(1)-1)%uint64(len(s))]
}

// missing lists the kinds of request some replica has answered fewer
// than each times, as "replica op (n)"; a payment sent again (a retry) is
// one kind.
func missing(each int, targets []target, tallies []*tally) []string {
	var m []string
	for k, t := range targets {
		for o := range nOps {
			if n := tallies[k].ops[o].Load(); t.serves(o) && n < int64(each) {
				m = append(m, fmt.Sprintf("%s %s (%d)", replicaNames[k], opPaths[o], n))
			}
		}
		if n := tallies[k].retries.Load(); t.serves(opPay) && n < int64(each) {
			m = append(m, fmt.Sprintf("%s retried pay (%d)", replicaNames[k], n))
		}
	}
	return m
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
