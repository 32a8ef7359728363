package main

import (
	"bufio"
	"context"
	"io"
	"net"
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
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs serve on a loopback listener and returns a connection to it;
// the server stops (and serve must return nil) at cleanup.
func start(t *testing.T, redisURL string) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis, redisURL, 50*time.Millisecond, pw); pw.Close() }()
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
			t.Errorf("serve: %v", err)
		}
	})
	return conn
}

// Ten concurrent payments of one order charge it once: the lock serialises
// them and the later ones find it paid. GetOrder takes no lock (selector),
// reflection lists the service, an empty order id is InvalidArgument.
func checkOrders(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ordersv1.NewOrdersClient(conn)

	const n = 10
	var wg sync.WaitGroup
	codesSeen := make(chan codes.Code, n)
	tokens := make(chan int64, n)
	for range n {
		wg.Go(func() {
			resp, err := cl.PayOrder(ctx, &ordersv1.PayOrderRequest{OrderId: "42", AmountCents: 1000})
			codesSeen <- status.Code(err)
			if err == nil {
				tokens <- resp.GetFencingToken()
			}
		})
	}
	wg.Wait()
	close(codesSeen)
	close(tokens)
	var ok, paid int
	for c := range codesSeen {
		switch c {
		case codes.OK:
			ok++
		case codes.FailedPrecondition:
			paid++
		default:
			t.Fatalf("PayOrder: %v", c)
		}
	}
	if ok != 1 || paid != n-1 {
		t.Fatalf("%d payments went through, %d found the order paid; want 1 and %d", ok, paid, n-1)
	}
	if tok := <-tokens; tok <= 0 {
		t.Fatalf("fencing token %d", tok)
	}
	o, err := cl.GetOrder(ctx, &ordersv1.GetOrderRequest{OrderId: "42"})
	if err != nil || o.GetCharges() != 1 || o.GetStatus() != ordersv1.OrderStatus_ORDER_STATUS_PAID {
		t.Fatalf("order after the payments: %v, %v", o, err)
	}
	if _, err := cl.RefundOrder(ctx, &ordersv1.RefundOrderRequest{OrderId: "42"}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.PayOrder(ctx, &ordersv1.PayOrderRequest{AmountCents: 1})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("PayOrder without an order id: %v", err)
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
	if _, err := (&ordersv1.PayOrderRequest{}).LockKey(); err == nil {
		t.Fatal("empty order id gave a key")
	}
}
