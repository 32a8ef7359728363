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
	"github.com/lockkit/lockkit/internal/testkit"
)

// A redis-server that stops answering (SIGSTOP), with a wait budget
// (300ms) shorter than the I/O timeout (2s), itself shorter than the call's
// deadline: nobody holds the order, so the call is refused Unavailable,
// never Aborted "locked by another call"; FailOpen runs the handler
// unlocked; a call whose own deadline passes first gets DeadlineExceeded
// and a fail-open handler never runs for it.
func TestRedisFrozen(t *testing.T) {
	srv := redistest.Start(t)
	var ran, leased atomic.Int32
	svc := &service{keyed: func(ctx context.Context, _ *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		ran.Add(1)
		if _, ok := core.LeaseFromContext(ctx); ok {
			leased.Add(1)
		}
		return &testpb.PayResponse{}, nil
	}}
	c := newClient(t, srv)
	const budget = 300 * time.Millisecond
	closed := serve(t, svc, unary(c, grpclock.Wait(budget)))
	open := serve(t, svc, unary(c, grpclock.Wait(budget), grpclock.FailOpen()))
	expired := serve(t, svc, unary(c, grpclock.Wait(5*time.Second), grpclock.FailOpen()))
	ctx := testkit.Context(t, 30*time.Second)
	if _, err := closed.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "warm"}); err != nil {
		t.Fatal(err)
	}
	ran.Store(0)
	leased.Store(0)
	srv.Pause()
	defer srv.Resume()

	var trailer metadata.MD
	_, err := closed.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "1"}, grpc.Trailer(&trailer))
	wantRetryHint(t, wantCode(t, err, codes.Unavailable), trailer, time.Second)
	if n := ran.Load(); n != 0 {
		t.Fatalf("fail-closed handler ran %d times with Redis frozen", n)
	}
	if _, err := open.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "2"}); err != nil || ran.Load() != 1 || leased.Load() != 0 {
		t.Fatalf("fail-open with Redis frozen: %v, ran %d (leased %d), want run once unlocked", err, ran.Load(), leased.Load())
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = expired.PayKeyed(short, &testpb.KeyedRequest{OrderId: "3"})
	wantCode(t, err, codes.DeadlineExceeded)
	if n := ran.Load(); n != 1 {
		t.Fatalf("a fail-open handler ran for an expired call (%d runs)", n)
	}
	srv.Resume()
	testkit.WaitFor(t, 15*time.Second, "calls to succeed after Redis resumed", func() bool {
		_, err := closed.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "4"})
		return err == nil
	})
}
