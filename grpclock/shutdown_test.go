package grpclock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The Client closes while a call holds an order and another waits for it
// on a fail-open interceptor: the holder's context ends with cause
// core.ErrClosed, and the waiter is refused Unavailable, never run unlocked
// beside the lock's next holder.
func TestCloseWhileInFlight(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	entered, causes := make(chan struct{}, 1), make(chan error, 1)
	var calls atomic.Int32
	svc := &service{keyed: func(ctx context.Context, _ *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		if calls.Add(1) > 1 {
			return &testpb.PayResponse{}, nil // a second run: the waiter ran
		}
		entered <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return &testpb.PayResponse{}, nil
	}}
	cl := serve(t, svc, unary(c, grpclock.FailOpen()))
	ctx := testkit.Context(t, 30*time.Second)
	holder, waiter := make(chan error, 1), make(chan error, 1)
	go func() { _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "7"}); holder <- err }()
	testkit.Recv(t, entered, 10*time.Second, "the holder's handler")
	go func() { _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "7"}); waiter <- err }()
	testkit.WaitFor(t, 10*time.Second, "the waiter to meet the holder", func() bool { _, n, _, _ := rec.counts(); return n >= 1 })
	_ = c.Close()
	if cause := testkit.Recv(t, causes, 10*time.Second, "the holder's context to end"); !errors.Is(cause, core.ErrClosed) {
		t.Errorf("holder's context cause %v, want ErrClosed", cause)
	}
	wantCode(t, testkit.Recv(t, waiter, 10*time.Second, "the waiter"), codes.Unavailable)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times; the waiter must not run unlocked", n)
	}
	testkit.Recv(t, holder, 10*time.Second, "the holder")
}
