package grpclock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
)

// A retried call gets the first run's response and header metadata, marked
// replayed, and the handler ran once; another message under the key is
// FailedPrecondition; the key comes from the idempotency-key metadata.
func TestIdempotentReplay(t *testing.T) {
	srv := redistest.Start(t)
	var runs atomic.Int64
	svc := &service{pay: func(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
		n := runs.Add(1)
		_ = grpc.SetHeader(ctx, metadata.Pairs("location", "/pay/"+r.GetOrderId(), "x-secret", "no"))
		l, _ := core.ClaimFromContext(ctx)
		return &testpb.PayResponse{Token: n*1000 + l.Token()}, nil
	}}
	cl := serve(t, svc, grpc.ChainUnaryInterceptor(grpclock.IdempotentUnaryServerInterceptor(newClient(t, srv), grpclock.IdempotencyRequired())))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "idempotency-key", "k1")
	var h1, h2 metadata.MD
	r1, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "42"}, grpc.Header(&h1))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "42"}, grpc.Header(&h2))
	if err != nil {
		t.Fatal(err)
	}
	if r1.GetToken() != r2.GetToken() || runs.Load() != 1 {
		t.Fatalf("responses %v, %v after %d runs; want one run, its answer twice", r1, r2, runs.Load())
	}
	if got := h2.Get("idempotent-replayed"); len(got) != 1 || got[0] != "true" {
		t.Errorf("replay header %v", h2)
	}
	if got := h1.Get("idempotent-replayed"); len(got) != 0 {
		t.Errorf("first answer marked replayed: %v", h1)
	}
	if got := h2.Get("location"); len(got) != 1 || got[0] != "/pay/42" {
		t.Errorf("replayed location %v", got)
	}
	if got := h2.Get("x-secret"); len(got) != 0 {
		t.Errorf("replayed x-secret %v, not allow-listed", got)
	}
	_, err = cl.Pay(ctx, &testpb.PayRequest{OrderId: "43"})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = cl.Pay(context.Background(), &testpb.PayRequest{OrderId: "43"})
	wantCode(t, err, codes.InvalidArgument)
	if runs.Load() != 1 {
		t.Fatalf("%d runs", runs.Load())
	}
}

// A handler whose lock ended under it (held for its MaxHold) answers OK,
// but its answer is not stored: its work was not protected to its end, so
// the retry runs again (as HTTP's Completion.Ended).
func TestIdempotentLockEndedNotStored(t *testing.T) {
	srv := redistest.Start(t)
	var runs atomic.Int64
	svc := &service{pay: func(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
		n := runs.Add(1)
		if n == 1 {
			<-ctx.Done() // the lock's MaxHold ends the handler's context
		}
		return &testpb.PayResponse{Token: n}, nil
	}}
	cl := serve(t, svc, grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(newClient(t, srv),
		grpclock.Key(grpclock.Field("order_id")), grpclock.MaxHold(100*time.Millisecond), grpclock.Idempotent())))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "idempotency-key", "k-ended")
	var h metadata.MD
	for range 2 {
		if _, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "7"}, grpc.Header(&h)); err != nil {
			t.Fatal(err)
		}
	}
	if runs.Load() != 2 || len(h.Get("idempotent-replayed")) != 0 {
		t.Fatalf("%d runs, last replayed %v: want the retry to run again", runs.Load(), h.Get("idempotent-replayed"))
	}
}
