package ordersgrpc

import (
	"context"
	"errors"
	"iter"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// An import holds order:<id> from its first message to its end: a payment
// of that order sent after the first line waits (its attempt finds the
// lock held) until the import ends, and then sees all of it. Without the
// lock the same payment runs inside the import and sees one line: the
// checks of the locked run are not vacuous.
func TestImportHoldsTheOrder(t *testing.T) {
	srv := redistest.Start(t)
	for _, noLock := range []bool{false, true} {
		name := map[bool]string{false: "locked", true: "nolock"}[noLock]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ev := newEvents()
			book := newSignalBook(false)
			cfg := Config{Book: book, Wait: 20 * time.Second, NoLock: noLock}
			if !noLock {
				cfg.Client = newClient(t, srv, ev)
			}
			cl := startServer(t, cfg)

			imp, err := cl.ImportLines(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sendLine(t, imp, "7", "a")
			book.awaitAdded(t, "a") // the first message took the lock (if any) and was written

			type payResult struct {
				r   *ordersv1.PayOrderResponse
				err error
			}
			paid := make(chan payResult, 1)
			go func() {
				r, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "7"})
				paid <- payResult{r, err}
			}()
			if noLock {
				p := <-paid
				if p.err != nil || p.r.GetOrder().GetLines() != 1 {
					t.Fatalf("pay without the lock, inside the import: %v %v", p.r, p.err)
				}
				sendLine(t, imp, "7", "b")
				if sum, err := imp.CloseAndRecv(); err != nil || sum.GetLinesImported() != 2 || sum.GetFencingToken() != 0 {
					t.Fatalf("import without the lock: %v %v", sum, err)
				}
				return
			}

			ev.await(t, ev.contended, "order:7") // the payment found the order held and waits
			sendLine(t, imp, "7", "b")
			sendLine(t, imp, "7", "c")
			book.awaitAdded(t, "b")
			book.awaitAdded(t, "c")
			select {
			case p := <-paid:
				t.Fatalf("a payment ran inside the import: %v %v", p.r, p.err)
			default:
			}
			sum, err := imp.CloseAndRecv()
			if err != nil || sum.GetLinesImported() != 3 || sum.GetOrder().GetLines() != 3 || sum.GetFencingToken() == 0 || sum.GetOrder().GetToken() != sum.GetFencingToken() {
				t.Fatalf("import: %v %v", sum, err)
			}
			p := <-paid
			if p.err != nil || p.r.GetOrder().GetLines() != 3 || p.r.GetFencingToken() <= sum.GetFencingToken() {
				t.Fatalf("pay after the import (token %d): %v %v", sum.GetFencingToken(), p.r, p.err)
			}
		})
	}
}

// Both streams hold order:<id> while they run (another replica's no-wait
// attempt finds it held) and release it when the client cancels the call
// mid-stream: the server's lock client reports the release, and the other
// replica then gets the lock at once.
func TestStreamsReleaseOnCancel(t *testing.T) {
	srv := redistest.Start(t)
	ev := newEvents()
	book := newSignalBook(true) // an export stalls after its first line until its call ends
	cl := startServer(t, Config{Client: newClient(t, srv, ev), Book: book, Wait: 20 * time.Second})
	other := newClient(t, srv, core.NopObserver{})
	bg, cancelAll := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelAll()
	if _, _, err := book.Store.Import(bg, "8", 1, lines("x", "y")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, key string
		open      func(ctx context.Context) // opens the stream and returns once it holds the lock
	}{
		{"ImportLines", "order:9", func(ctx context.Context) {
			imp, err := cl.ImportLines(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sendLine(t, imp, "9", "a")
			book.awaitAdded(t, "a")
		}},
		{"ExportLines", "order:8", func(ctx context.Context) {
			exp, err := cl.ExportLines(ctx, &ordersv1.ExportLinesRequest{OrderId: "8"})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := exp.Recv(); err != nil || r.GetLineNo() != 1 || r.GetLine().GetSku() != "x" || r.GetFencingToken() == 0 {
				t.Fatalf("first line: %v %v", r, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			ev.drain()
			tc.open(ctx)
			if l, err := other.Acquire(bg, tc.key, core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
				if l != nil {
					_ = l.Release(bg)
				}
				t.Fatalf("%s while the stream runs: %v", tc.key, err)
			}
			cancel()
			ev.await(t, ev.released, tc.key)
			l, err := other.Acquire(bg, tc.key, core.NoWait())
			if err != nil {
				t.Fatalf("%s after the client cancelled: %v", tc.key, err)
			}
			if err := l.Release(bg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// What the streams refuse: an upload with no message, a first message with
// no order id (the lock cannot be keyed: the interceptor answers), a later
// message naming another order or carrying a bad line (the lines before it
// stay, and the status says how many), an export with no order id; and a
// stream whose order stays held past the wait budget is Aborted with a
// retry hint, as PayOrder is.
func TestStreamRefusals(t *testing.T) {
	srv := redistest.Start(t)
	book := newSignalBook(false)
	cl := startServer(t, Config{Client: newClient(t, srv, core.NopObserver{}), Book: book, Wait: 300 * time.Millisecond})
	other := newClient(t, srv, core.NopObserver{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	item := func(sku string, q int64) *ordersv1.LineItem {
		return &ordersv1.LineItem{Sku: sku, Quantity: q, UnitCents: 100}
	}
	upload := func(msgs ...*ordersv1.ImportLinesRequest) error {
		imp, err := cl.ImportLines(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := imp.Send(m); err != nil {
				break // the server answered already: CloseAndRecv has it
			}
		}
		_, err = imp.CloseAndRecv()
		return err
	}
	export := func(id string) error {
		exp, err := cl.ExportLines(ctx, &ordersv1.ExportLinesRequest{OrderId: id})
		if err != nil {
			return err
		}
		for {
			if _, err := exp.Recv(); err != nil {
				return err
			}
		}
	}

	for _, tc := range []struct {
		name string
		err  error
		msg  string
	}{
		{"empty upload", upload(), "at least one message"},
		{"no order id", upload(&ordersv1.ImportLinesRequest{Line: item("a", 1)}), "invalid lock key"},
		{"another order", upload(&ordersv1.ImportLinesRequest{OrderId: "5", Line: item("a", 1)}, &ordersv1.ImportLinesRequest{OrderId: "6", Line: item("b", 1)}), "(lines imported before it: 1)"},
		{"bad line", upload(&ordersv1.ImportLinesRequest{OrderId: "5", Line: item("c", 0)}), "(lines imported before it: 0)"},
		{"export without an order id", export(""), "invalid lock key"},
	} {
		if st := status.Convert(tc.err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.msg) {
			t.Errorf("%s: %v, want InvalidArgument with %q", tc.name, tc.err, tc.msg)
		}
	}
	if o := book.Get("5"); o.Lines != 1 || o.Total != 100 {
		t.Errorf("order 5 after an import cut at its second line: %+v", o)
	}
	if o := book.Get("6"); o.Lines != 0 {
		t.Errorf("order 6 got a line under order 5's lock: %+v", o)
	}

	held, err := other.Acquire(ctx, "order:5")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(ctx) }()
	for what, err := range map[string]error{
		"ImportLines": upload(&ordersv1.ImportLinesRequest{OrderId: "5", Line: item("d", 1)}),
		"ExportLines": export("5"),
	} {
		if !retryable(err) {
			t.Errorf("%s of an order held past the wait budget: %v", what, err)
		}
	}
	if o := book.Get("5"); o.Lines != 1 {
		t.Errorf("order 5 written while held elsewhere: %+v", o)
	}
}

// retryable is the lock's refusal: Aborted with a RetryInfo detail.
func retryable(err error) bool {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			return st.Code() == codes.Aborted
		}
	}
	return false
}

// startServer runs NewServer(cfg) on loopback until the test ends and returns a
// client of it.
func startServer(t *testing.T, cfg Config) ordersv1.OrdersClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, NewServer(cfg), lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ordersv1.NewOrdersClient(conn)
}

// newClient is a lock client on srv with obs, closed when the test ends.
func newClient(t *testing.T, srv *redistest.Server, obs core.Observer) *core.Client {
	c, err := core.New(srv.NewClient(), core.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func sendLine(t *testing.T, s grpc.ClientStreamingClient[ordersv1.ImportLinesRequest, ordersv1.ImportLinesResponse], id, sku string) {
	t.Helper()
	if err := s.Send(&ordersv1.ImportLinesRequest{OrderId: id, Line: &ordersv1.LineItem{Sku: sku, Quantity: 1, UnitCents: 100}}); err != nil {
		t.Fatalf("send line %s: %v", sku, err)
	}
}

// lines yields one line of 100 cents per sku.
func lines(skus ...string) iter.Seq2[orders.Line, error] {
	return func(yield func(orders.Line, error) bool) {
		for _, s := range skus {
			if !yield(orders.Line{SKU: s, Quantity: 1, UnitCents: 100}, nil) {
				return
			}
		}
	}
}

// signalBook is the store with signals: each line an import added (by
// SKU), and, with holdExport, an export that stops after its first line
// until its context ends, so only the client can end it.
type signalBook struct {
	*orders.Store
	added      chan string
	holdExport bool
}

func newSignalBook(holdExport bool) *signalBook {
	return &signalBook{Store: orders.NewStore(0), added: make(chan string, 64), holdExport: holdExport}
}

func (b *signalBook) Import(ctx context.Context, id string, token int64, ls iter.Seq2[orders.Line, error]) (orders.Order, int, error) {
	return b.Store.Import(ctx, id, token, func(yield func(orders.Line, error) bool) {
		for l, err := range ls {
			if !yield(l, err) {
				return
			}
			b.added <- l.SKU // the store took the line and asks for the next
		}
	})
}

func (b *signalBook) ExportLines(ctx context.Context, id string, send func(orders.Line) error) (int, error) {
	return b.Store.ExportLines(ctx, id, func(l orders.Line) error {
		if err := send(l); err != nil || !b.holdExport {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
}

// awaitAdded waits (at most 10s) for the import to have added the line sku.
func (b *signalBook) awaitAdded(t *testing.T, sku string) {
	t.Helper()
	select {
	case got := <-b.added:
		if got != sku {
			t.Fatalf("line %s added, want %s", got, sku)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("line %s not added", sku)
	}
}

// events is an Observer that signals, by key and never blocking the
// engine, each attempt that found a lock held and each release.
type events struct {
	core.NopObserver
	contended, released chan string
}

func newEvents() *events {
	return &events{contended: make(chan string, 64), released: make(chan string, 64)}
}

func (e *events) Contended(_ context.Context, a core.AcquireInfo, _ core.Holder, _ int) {
	signal(e.contended, a.Key)
}

func (e *events) Released(_ context.Context, l core.LeaseInfo, _ error) { signal(e.released, l.Key) }

func signal(ch chan string, key string) {
	select {
	case ch <- key:
	default:
	}
}

// drain forgets what was signalled so far.
func (e *events) drain() {
	for _, ch := range []chan string{e.contended, e.released} {
		for len(ch) > 0 {
			<-ch
		}
	}
}

// await waits (at most 10s) for key on ch.
func (e *events) await(t *testing.T, ch chan string, key string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case k := <-ch:
			if k == key {
				return
			}
		case <-timeout:
			t.Fatalf("no event for %s", key)
		}
	}
}
