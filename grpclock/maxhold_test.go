package grpclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A unary call past MaxHold: its context ends with cause core.ErrMaxHold,
// the handler that fails for it is answered Aborted with a retry hint, the
// release-error hook hears ErrMaxHold, and the next call gets the lock at
// once (TTL 30s: freed by the release, not the expiry).
func TestUnaryMaxHold(t *testing.T) {
	srv := redistest.Start(t)
	causes, released := make(chan error, 1), make(chan error, 1)
	held := make(chan struct{}, 1)
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		if r.OrderId != "slow" {
			return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
		}
		held <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	c := serve(t, svc, unary(newClient(t, srv), grpclock.MaxHold(200*time.Millisecond), grpclock.NoWait(),
		grpclock.OnReleaseError(func(_ context.Context, _ string, err error) { released <- err })))
	ctx := testkit.Context(t, 30*time.Second)
	_, err := c.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "slow"})
	testkit.Recv(t, held, 10*time.Second, "the slow call's handler")
	if cause := testkit.Recv(t, causes, 10*time.Second, "the handler's context to end"); !errors.Is(cause, core.ErrMaxHold) {
		t.Fatalf("cause %v, want ErrMaxHold", cause)
	}
	if st := wantCode(t, err, codes.Aborted); st.Message() != "lockkit: the call held its lock for its maximum hold" {
		t.Errorf("message %q", st.Message())
	}
	if err := testkit.Recv(t, released, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("release-error hook got %v, want ErrMaxHold", err)
	}
	if _, err := c.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "slow2"}); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// A client stream keyed by its first message that then stays silent frees
// its lock at MaxHold, while the stream is still open: the handler waits in
// RecvMsg, idle, so the lock is released without waiting for it. Its
// RecvMsg then fails Aborted. Without MaxHold the stream held the key as
// long as the client kept it open, renewed past every TTL.
func TestIdleStreamPastMaxHoldFreesTheLock(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = time.Minute // far beyond the test: only a release frees the lock
	client := newClient(t, srv, core.WithTTL(ttl))
	recvErr := make(chan error, 1)
	svc := &service{upload: func(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
		for {
			if _, err := ss.Recv(); err != nil {
				recvErr <- err
				return err
			}
		}
	}}
	c := serve(t, svc, stream(client, grpclock.FromFirstMessage(), grpclock.Key(grpclock.Const("tenant"), grpclock.Field("tenant")),
		grpclock.MaxHold(300*time.Millisecond)))
	ctx := testkit.Context(t, 30*time.Second)
	up, err := c.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Send(&testpb.Chunk{Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the first message to take the lock", func() bool {
		_, ok, err := client.Inspect(ctx, "tenant:acme")
		return err == nil && ok
	})
	// The client stays silent; the stream stays open.
	testkit.WaitFor(t, 10*time.Second, "the idle stream's lock to be freed at MaxHold", func() bool {
		_, ok, err := client.Inspect(ctx, "tenant:acme")
		return err == nil && !ok
	})
	l, err := client.Acquire(ctx, "tenant:acme", core.NoWait())
	if err != nil {
		t.Fatalf("another holder while the idle stream is still open: %v", err)
	}
	_ = l.Release(ctx)
	// The client ends its stream: the message or end it sends after the
	// bound is refused, and so is the call.
	_, err = up.CloseAndRecv()
	wantCode(t, err, codes.Aborted)
	wantCode(t, testkit.Recv(t, recvErr, 10*time.Second, "the handler's RecvMsg"), codes.Aborted)
}
