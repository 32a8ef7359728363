package main

import (
	"bufio"
	"context"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
)

// TestMain is the program itself when MainHidesSecrets runs it.
func TestMain(m *testing.M) {
	exampletest.AsMain(main)
	goleak.VerifyTestMain(m)
}

// start runs serveOrders on a loopback listener and returns a connection to it;
// the server stops (and serveOrders must return nil) at cleanup.
func start(t *testing.T, redisURL string) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveOrders(ctx, lis, redisURL, 20*time.Millisecond, pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, "listening on "+lis.Addr().String()) {
		t.Fatalf("first line %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveOrders: %v", err)
		}
	})
	return conn
}

// Ten concurrent payments of one order all count (the lock serialises
// their read-modify-write; the book is fenced with strictly increasing
// tokens), a refund larger than the balance is refused, five concurrent
// ShipOrder calls ship once (the others find the order busy — no wait — or
// shipped), GetOrder takes no lock (selector), reflection lists the service,
// an empty order id or a negative amount is InvalidArgument, and the
// streams run (checkStreams).
func checkOrders(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ordersv1.NewOrdersClient(conn)

	const n = 10
	var wg sync.WaitGroup
	tokens := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			resp, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "42", AmountCents: 1000})
			if err != nil {
				t.Errorf("PayOrder: %v", err)
				return
			}
			if resp.GetFencingToken() != resp.GetOrder().GetToken() {
				t.Errorf("fencing token %d, order written with %d", resp.GetFencingToken(), resp.GetOrder().GetToken())
			}
			tokens[i] = resp.GetFencingToken()
		})
	}
	wg.Wait()
	slices.Sort(tokens)
	for i := 1; i < n; i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("fencing tokens not distinct and positive: %v", tokens)
		}
	}
	o, err := cl.GetOrder(ctx, &ordersv1.GetOrderRequest{OrderId: "42"})
	if err != nil || o.GetPayments() != n || o.GetBalanceCents() != n*1000 || o.GetToken() != tokens[n-1] {
		t.Fatalf("order after %d payments of 1000 (last token %d): %v, %v: updates were lost", n, tokens[n-1], o, err)
	}
	if r, err := cl.RefundOrder(ctx, &ordersv1.RefundOrderRequest{OrderId: "42", AmountCents: 2500}); err != nil || r.GetOrder().GetBalanceCents() != n*1000-2500 {
		t.Fatalf("RefundOrder: %v, %v", r, err)
	}
	if _, err := cl.RefundOrder(ctx, &ordersv1.RefundOrderRequest{OrderId: "42", AmountCents: n * 1000}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("refund above the balance: %v", err)
	}

	// A payment that would overflow the balance is refused and changes nothing.
	if _, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "big", AmountCents: math.MaxInt64}); err != nil {
		t.Fatalf("PayOrder of MaxInt64: %v", err)
	}
	if _, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "big", AmountCents: math.MaxInt64}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("PayOrder overflowing the balance: %v", err)
	}
	if o, err := cl.GetOrder(ctx, &ordersv1.GetOrderRequest{OrderId: "big"}); err != nil || o.GetBalanceCents() != math.MaxInt64 || o.GetPayments() != 1 {
		t.Errorf("order after a refused payment: %v %v", o, err)
	}

	ships := make(chan codes.Code, 5)
	for range cap(ships) {
		wg.Go(func() {
			_, err := cl.ShipOrder(ctx, &ordersv1.ShipOrderRequest{OrderId: "42"})
			ships <- status.Code(err)
		})
	}
	wg.Wait()
	close(ships)
	shipped := 0
	for c := range ships {
		switch c {
		case codes.OK:
			shipped++
		case codes.Aborted, codes.FailedPrecondition: // busy (no wait), or already shipped
		default:
			t.Errorf("ShipOrder: %v", c)
		}
	}
	if shipped != 1 {
		t.Fatalf("shipped %d times", shipped)
	}
	if _, err := cl.ShipOrder(ctx, &ordersv1.ShipOrderRequest{OrderId: "43"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("ship an unpaid order: %v", err)
	}
	for what, err := range map[string]error{
		"PayOrder without an order id": func() error {
			_, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{AmountCents: 1})
			return err
		}(),
		"PayOrder of a negative amount": func() error {
			_, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "42", AmountCents: -1})
			return err
		}(),
		"GetOrder without an order id": func() error {
			_, err := cl.GetOrder(ctx, &ordersv1.GetOrderRequest{})
			return err
		}(),
	} {
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", what, err)
		}
	}

	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := refl.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = refl.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, ","), "orders.v1.Orders") {
		t.Fatalf("reflection lists %v", names)
	}
	checkStreams(t, cl)
}

// checkStreams imports two lines into an order over ImportLines (one lock,
// one fencing token for both) and reads them back over ExportLines, under a
// newer lock whose token every message carries.
func checkStreams(t *testing.T, cl ordersv1.OrdersClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	imp, err := cl.ImportLines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []*ordersv1.LineItem{{Sku: "tea", Quantity: 2, UnitCents: 450}, {Sku: "cup", Quantity: 1, UnitCents: 900}}
	for _, l := range want {
		if err := imp.Send(&ordersv1.ImportLinesRequest{OrderId: "lines", Line: l}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := imp.CloseAndRecv()
	if o := sum.GetOrder(); err != nil || sum.GetLinesImported() != 2 || o.GetLines() != 2 || o.GetTotalCents() != 1800 || o.GetToken() != sum.GetFencingToken() || o.GetToken() == 0 {
		t.Fatalf("ImportLines: %v %v", sum, err)
	}
	exp, err := cl.ExportLines(ctx, &ordersv1.ExportLinesRequest{OrderId: "lines"})
	if err != nil {
		t.Fatal(err)
	}
	var tokens []int64
	for i := 0; ; i++ {
		r, err := exp.Recv()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("ExportLines sent %d lines, want %d", i, len(want))
			}
			break
		}
		if err != nil || i >= len(want) || r.GetLineNo() != int64(i+1) || r.GetLine().GetSku() != want[i].GetSku() || r.GetLine().GetUnitCents() != want[i].GetUnitCents() {
			t.Fatalf("ExportLines message %d: %v %v", i+1, r, err)
		}
		tokens = append(tokens, r.GetFencingToken())
	}
	if tokens[0] <= sum.GetFencingToken() || tokens[1] != tokens[0] {
		t.Fatalf("export tokens %v after the import's %d: want one lock, newer", tokens, sum.GetFencingToken())
	}
}

// Without REDIS_URL the example runs on its embedded miniredis.
func TestServesOnEmbeddedMiniredis(t *testing.T) { checkOrders(t, start(t, "")) }

// With REDIS_URL it uses that Redis.
func TestServesOnRedisURL(t *testing.T) {
	srv := redistest.Start(t)
	checkOrders(t, start(t, "redis://"+srv.Addr()))
	if n, err := srv.Client.Exists(context.Background(), "lockkit:v1:k:order:42").Result(); err != nil || n != 1 {
		t.Fatalf("lock hash of order:42 on the given Redis: %d, %v", n, err)
	}
}

func TestLockKey(t *testing.T) {
	if k, err := (&ordersv1.PayOrderRequest{OrderId: "42"}).LockKey(); k != "order:42" || err != nil {
		t.Fatalf("LockKey = %q, %v", k, err)
	}
	if k, err := (&ordersv1.RefundOrderRequest{OrderId: "a:b"}).LockKey(); k != `order:a\:b` || err != nil {
		t.Fatalf("LockKey = %q, %v", k, err)
	}
	if k, err := (&ordersv1.ShipOrderRequest{OrderId: "42"}).LockKey(); k != "order:42" || err != nil {
		t.Fatalf("LockKey = %q, %v", k, err)
	}
	if _, err := (&ordersv1.PayOrderRequest{}).LockKey(); err == nil {
		t.Fatal("empty order id gave a key")
	}
}

// A port in use is an error naming it, with no banner printed.
func TestRunPortInUse(t *testing.T) { exampletest.PortInUse(t, run) }

// Without -addr, run listens where ADDR says, as every example does.
func TestRunAddrFromEnv(t *testing.T) { exampletest.AddrFromEnv(t, run) }

// -redis is taken over REDIS_URL ("" asks for the embedded miniredis).
func TestRunRedisFlag(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	env := func(k string) string { return map[string]string{"REDIS_URL": "http://nope"}[k] }
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-redis", ""}, env, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, "embedded miniredis") {
		t.Errorf("first line %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// run listens where -addr says and stops when its context ends; a bad flag
// or address is an error.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-work", "0"}, func(string) string { return "" }, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, "listening on 127.0.0.1:") || !strings.Contains(line, "embedded miniredis") {
		t.Fatalf("first line %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := run(context.Background(), []string{"-nope"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a bad flag was accepted")
	}
	if err := run(context.Background(), []string{"-addr", "256.0.0.1:1"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a bad address was accepted")
	}
}
