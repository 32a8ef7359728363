package grpclock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/testing/conformance"
)

// holdAll is a handler that counts calls inside and holds them until
// released: two inside at once prove parallelism without a stopwatch.
type holdAll struct {
	inside  atomic.Int32
	entered chan struct{}
	open    chan struct{}
}

func newHoldAll() *holdAll {
	return &holdAll{entered: make(chan struct{}, 64), open: make(chan struct{})}
}

func (h *holdAll) pay(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayResponse, error) {
	h.inside.Add(1)
	h.entered <- struct{}{}
	select {
	case <-h.open:
	case <-ctx.Done():
	}
	h.inside.Add(-1)
	return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
}

func (h *holdAll) waitInside(t *testing.T, n int32) {
	t.Helper()
	for h.inside.Load() < n {
		testkit.Recv(t, h.entered, 10*time.Second, "a call inside")
	}
}

// Limit(2): two calls of one key run at once; a third is answered
// ResourceExhausted with the retry hint once its wait budget ends.
func TestLimit(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 30*time.Second)
	h := newHoldAll()
	cl := serve(t, &service{pay: h.pay}, unary(newClient(t, srv), grpclock.Key(grpclock.Const("export"), grpclock.Field("tenant_name")),
		grpclock.Limit(2), grpclock.Wait(300*time.Millisecond)))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := cl.Pay(ctx, &testpb.PayRequest{TenantName: "t1"}); err != nil {
				t.Error(err)
			}
		})
	}
	h.waitInside(t, 2)
	var trailer metadata.MD
	_, err := cl.Pay(ctx, &testpb.PayRequest{TenantName: "t1"}, grpc.Trailer(&trailer))
	st := wantCode(t, err, codes.ResourceExhausted)
	wantRetryHint(t, st, trailer, time.Second)
	close(h.open)
	wg.Wait()
}

// ReadSide and WriteSide on one key: calls of the read interceptor run
// together, a write waits for them (Aborted past its budget).
func TestReadAndWriteSides(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 30*time.Second)
	h := newHoldAll()
	c := newClient(t, srv)
	readers := serve(t, &service{pay: h.pay}, unary(c, grpclock.Key(grpclock.Const("doc")), grpclock.ReadSide()))
	writers := serve(t, &service{}, unary(c, grpclock.Key(grpclock.Const("doc")), grpclock.WriteSide(), grpclock.Wait(300*time.Millisecond)))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := readers.Pay(ctx, &testpb.PayRequest{}); err != nil {
				t.Error(err)
			}
		})
	}
	h.waitInside(t, 2)
	_, err := writers.Pay(ctx, &testpb.PayRequest{})
	wantCode(t, err, codes.Aborted)
	close(h.open)
	wg.Wait()
	if _, err := writers.Pay(ctx, &testpb.PayRequest{}); err != nil {
		t.Fatalf("the write once the readers left: %v", err)
	}
	// gRPC has no safe methods: ReadWrite is not an option here, and a
	// side with a limit is refused at construction.
	if p := conformance.Panic(func() { grpclock.UnaryServerInterceptor(c, grpclock.ReadSide(), grpclock.Limit(2)) }); p == nil {
		t.Fatal("ReadSide with Limit accepted")
	}
}

// Two Key options lock both resources of a call, all or nothing: transfers
// in both directions between three accounts all finish, and no account
// has two calls inside at once.
func TestSeveralKeys(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	var mu sync.Mutex
	inside := map[string]int{}
	var overlaps atomic.Int32
	transfer := func(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
		accts := []string{r.GetOrderId(), r.GetTenantName()}
		mu.Lock()
		for _, a := range accts {
			if inside[a]++; inside[a] > 1 {
				overlaps.Add(1)
			}
		}
		mu.Unlock()
		time.Sleep(time.Millisecond) // the transfer's work
		mu.Lock()
		for _, a := range accts {
			inside[a]--
		}
		mu.Unlock()
		return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
	}
	opts := []grpclock.Option{grpclock.Key(grpclock.Const("acct"), grpclock.Field("order_id")), grpclock.Key(grpclock.Const("acct"), grpclock.Field("tenant_name"))}
	a := serve(t, &service{pay: transfer}, unary(newClient(t, srv), opts...))
	b := serve(t, &service{pay: transfer}, unary(newClient(t, srv), opts...))
	pairs := [][2]string{{"x", "y"}, {"y", "x"}, {"y", "z"}, {"z", "y"}, {"z", "x"}, {"x", "z"}}
	var wg sync.WaitGroup
	for i := range 36 {
		p := pairs[i%len(pairs)]
		cl := []testpb.TestClient{a, b}[i%2]
		wg.Go(func() {
			if _, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: p[0], TenantName: p[1]}); err != nil {
				t.Errorf("transfer %v: %v", p, err)
			}
		})
	}
	wg.Wait()
	if o := overlaps.Load(); o != 0 {
		t.Fatalf("%d times an account had two calls inside", o)
	}
}
