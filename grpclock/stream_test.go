package grpclock_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

var accountKey = grpclock.Key(grpclock.Const("account"), grpclock.Metadata("x-account"))

// ledgerUntilDone is a server stream that sends one entry (so the client
// knows it holds the lock) and then streams until the call ends.
func ledgerUntilDone(w *witness, causes chan<- error) func(*testpb.LedgerRequest, grpc.ServerStreamingServer[testpb.LedgerEntry]) error {
	return func(_ *testpb.LedgerRequest, ss grpc.ServerStreamingServer[testpb.LedgerEntry]) error {
		ctx := ss.Context()
		if w != nil {
			w.mu.Lock()
			w.inside++
			if w.inside > 1 {
				w.overlap++
			}
			w.mu.Unlock()
			defer func() { w.mu.Lock(); w.inside--; w.mu.Unlock() }()
		}
		if err := ss.Send(&testpb.LedgerEntry{Seq: 1, Token: tokenOf(ctx)}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		if causes != nil {
			causes <- context.Cause(ctx)
		}
		return ctx.Err()
	}
}

// A server stream holds its lock from before its handler runs until it
// returns: a second stream on the key is refused (NoWait) or waits, and
// cancelling the first frees the lock at once — the waiter is woken by the
// release notification (3 attempts, as in core's wake test), long before the
// 20s TTL could expire.
func TestServerStreamHoldsLockForLife(t *testing.T) {
	srv := redistest.Start(t)
	w := &witness{}
	svc := &service{ledger: ledgerUntilDone(w, nil)}
	a := serve(t, svc, stream(newClient(t, srv), accountKey, grpclock.TTL(20*time.Second)))
	b := serve(t, svc, stream(newClient(t, srv), accountKey, grpclock.NoWait()))
	recC := newRecorder()
	cc := serve(t, svc, stream(newClient(t, srv, core.WithObserver(recC)), accountKey, grpclock.Wait(20*time.Second)))
	ctx := metadata.AppendToOutgoingContext(testkit.Context(t, 40*time.Second), "x-account", "acc-1")

	ctxA, cancelA := context.WithCancel(ctx)
	defer cancelA()
	sa, err := a.Ledger(ctxA, &testpb.LedgerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := sa.Recv()
	if err != nil || first.GetToken() <= 0 {
		t.Fatalf("first stream: %v, %v", first, err)
	}

	sb, err := b.Ledger(ctx, &testpb.LedgerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.Recv()
	st := wantCode(t, err, codes.Aborted)
	wantRetryHint(t, st, sb.Trailer(), time.Second)

	got := make(chan *testpb.LedgerEntry, 1)
	ctxC, cancelC := context.WithCancel(ctx)
	defer cancelC()
	go func() {
		sc, err := cc.Ledger(ctxC, &testpb.LedgerRequest{})
		if err != nil {
			got <- nil
			return
		}
		e, _ := sc.Recv()
		got <- e
	}()
	testkit.WaitFor(t, 10*time.Second, "the third stream to find the lock held, subscribed", func() bool {
		_, contended, _, _ := recC.counts()
		return contended >= 2
	})
	select {
	case e := <-got:
		t.Fatalf("third stream ran while the first held the lock: %v", e)
	default:
	}
	cancelA()
	freedAt := time.Now()
	var e *testpb.LedgerEntry
	select {
	case e = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not freed when the first stream was cancelled")
	}
	if e.GetToken() <= first.GetToken() {
		t.Fatalf("third stream: %v (first token %d)", e, first.GetToken())
	}
	var res core.AcquireResult
	for {
		r := testkit.Recv(t, recC.endCh, 10*time.Second, "recC.endCh")
		if r.res.Outcome == core.OutcomeAcquired {
			res = r.res
			break
		}
	}
	if res.Attempts != 3 {
		t.Fatalf("waiter made %d attempts, want 3 (refused, refused once subscribed, then on the release notification)", res.Attempts)
	}
	t.Logf("lock handed to the waiting stream %v after the first was cancelled", time.Since(freedAt).Round(time.Millisecond))
	cancelC()
	if _, overlap := w.result(); overlap != 0 {
		t.Fatalf("%d stream handlers overlapped", overlap)
	}
}

// uploadHandler counts chunks. It captures its context before the first
// RecvMsg, as handlers do, and reports what that context shows.
type uploadSeen struct {
	leaseBefore bool
	leaseKey    string // through the early context, after the first message
	recvErr     error  // first non-EOF receive error
	ctxErr      error  // the early context's error after recvErr
}

func uploadHandler(seen chan<- uploadSeen, holding chan<- struct{}) func(grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
	return func(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
		ctx := ss.Context()
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		var s uploadSeen
		_, s.leaseBefore = core.LeaseFromContext(ctx)
		n := int32(0)
		defer func() { seen <- s }()
		for {
			_, err := ss.Recv()
			if err == io.EOF {
				return ss.SendAndClose(&testpb.UploadSummary{Chunks: n, Token: tokenOf(ctx)})
			}
			if err != nil {
				s.recvErr = err
				<-derived.Done() // a refused stream's context ends, and derived contexts with it
				s.ctxErr = ctx.Err()
				// Ignore the refusal and claim success: the interceptor's
				// status must win.
				_ = ss.SendAndClose(&testpb.UploadSummary{Chunks: -1})
				return nil
			}
			n++
			if n == 1 {
				if l, ok := core.LeaseFromContext(derived); ok {
					s.leaseKey = l.Key()
				}
				if holding != nil {
					holding <- struct{}{}
				}
			}
		}
	}
}

var tenantFirst = []grpclock.Option{grpclock.FromFirstMessage(), grpclock.Key(grpclock.Const("tenant"), grpclock.Field("tenant"))}

// A client stream keyed by its first message: the handler's context (taken
// before the lock) shows the lease once the first message is in; a second
// upload for the tenant is refused with Aborted as its final status even
// though its handler claims success; a first message without the field is
// InvalidArgument.
func TestClientStreamKeyedByFirstMessage(t *testing.T) {
	srv := redistest.Start(t)
	seen := make(chan uploadSeen, 4)
	holding := make(chan struct{}, 4)
	svc := &service{upload: uploadHandler(seen, holding)}
	a := serve(t, svc, stream(newClient(t, srv), tenantFirst...))
	b := serve(t, svc, stream(newClient(t, srv), append(tenantFirst, grpclock.NoWait())...))
	ctx := testkit.Context(t, 30*time.Second)

	ua, err := a.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ua.Send(&testpb.Chunk{Tenant: "acme", Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, holding, 10*time.Second, "holding")

	ub, err := b.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ub.Send(&testpb.Chunk{Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	_, err = ub.CloseAndRecv()
	st := wantCode(t, err, codes.Aborted)
	wantRetryHint(t, st, ub.Trailer(), time.Second)
	sb := testkit.Recv(t, seen, 10*time.Second, "seen")
	if code := status.Code(sb.recvErr); code != codes.Aborted || sb.ctxErr == nil {
		t.Fatalf("refused handler saw Recv error %v and context error %v", sb.recvErr, sb.ctxErr)
	}

	if err := ua.Send(&testpb.Chunk{Tenant: "acme", Data: []byte("2")}); err != nil {
		t.Fatal(err)
	}
	sum, err := ua.CloseAndRecv()
	if err != nil || sum.GetChunks() != 2 || sum.GetToken() <= 0 {
		t.Fatalf("first upload: %v, %v", sum, err)
	}
	sa := testkit.Recv(t, seen, 10*time.Second, "seen")
	if sa.leaseBefore || sa.leaseKey != "tenant:acme" {
		t.Fatalf("early context: lease before the first message %v, after %q", sa.leaseBefore, sa.leaseKey)
	}

	// No tenant in the first message.
	uc, err := a.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = uc.Send(&testpb.Chunk{Data: []byte("x")})
	_, err = uc.CloseAndRecv()
	st = wantCode(t, err, codes.InvalidArgument)
	if !strings.Contains(st.Message(), `field "tenant"`) {
		t.Fatalf("message %q", st.Message())
	}
	testkit.Recv(t, seen, 10*time.Second, "seen")
}

// A client stream that ends before any message takes no lock.
func TestClientStreamEOFBeforeAnyMessage(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	seen := make(chan uploadSeen, 1)
	svc := &service{upload: uploadHandler(seen, nil)}
	cl := serve(t, svc, stream(newClient(t, srv, core.WithObserver(rec)), tenantFirst...))
	u, err := cl.Upload(testkit.Context(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := u.CloseAndRecv()
	if err != nil || sum.GetChunks() != 0 || sum.GetToken() != 0 {
		t.Fatalf("empty upload: %v, %v", sum, err)
	}
	if s := testkit.Recv(t, seen, 10*time.Second, "seen"); s.leaseKey != "" || s.recvErr != nil {
		t.Fatalf("handler saw %+v", s)
	}
	if starts, _, _, _ := rec.counts(); starts != 0 {
		t.Fatalf("%d acquires for a stream without messages", starts)
	}
}

// Losing the lease mid-stream (its Redis key deleted; TTL 1s) cancels the
// stream's context with cause ErrLost, for a stream keyed up front and for
// one keyed by its first message (whose context was made before the lock),
// and the caller gets Aborted.
func TestStreamLeaseLost(t *testing.T) {
	t.Run("metadata key", func(t *testing.T) {
		srv := redistest.Start(t)
		causes := make(chan error, 1)
		cl := serve(t, &service{ledger: ledgerUntilDone(nil, causes)}, stream(newClient(t, srv), accountKey, grpclock.TTL(time.Second)))
		ctx := metadata.AppendToOutgoingContext(testkit.Context(t, 30*time.Second), "x-account", "lost")
		s, err := cl.Ledger(ctx, &testpb.LedgerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		if n, err := srv.Client.Del(ctx, "lockkit:v1:k:account:lost").Result(); err != nil || n != 1 {
			t.Fatalf("DEL = %d, %v", n, err)
		}
		if cause := testkit.Recv(t, causes, 10*time.Second, "causes"); !errors.Is(cause, core.ErrLost) {
			t.Fatalf("stream context cause %v, want ErrLost", cause)
		}
		_, err = s.Recv()
		wantCode(t, err, codes.Aborted)
	})
	t.Run("first message", func(t *testing.T) {
		srv := redistest.Start(t)
		causes := make(chan error, 1)
		holding := make(chan struct{})
		svc := &service{upload: func(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
			ctx := ss.Context() // before the lock exists
			if _, err := ss.Recv(); err != nil {
				return err
			}
			close(holding)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Second):
			}
			causes <- context.Cause(ctx)
			return ctx.Err()
		}}
		cl := serve(t, svc, stream(newClient(t, srv), append(tenantFirst, grpclock.TTL(time.Second))...))
		ctx := testkit.Context(t, 30*time.Second)
		u, err := cl.Upload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Send(&testpb.Chunk{Tenant: "lost"}); err != nil {
			t.Fatal(err)
		}
		testkit.Recv(t, holding, 10*time.Second, "holding")
		if n, err := srv.Client.Del(ctx, "lockkit:v1:k:tenant:lost").Result(); err != nil || n != 1 {
			t.Fatalf("DEL = %d, %v", n, err)
		}
		if cause := testkit.Recv(t, causes, 10*time.Second, "causes"); !errors.Is(cause, core.ErrLost) {
			t.Fatalf("stream context cause %v, want ErrLost", cause)
		}
		_, err = u.CloseAndRecv()
		wantCode(t, err, codes.Aborted)
	})
}

// A stream's handler panicking releases the lock too.
func TestStreamPanicReleases(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	var once sync.Once
	svc := &service{upload: func(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
		if _, err := ss.Recv(); err != nil {
			return err
		}
		once.Do(func() { panic("upload exploded") })
		return ss.SendAndClose(&testpb.UploadSummary{Chunks: 1})
	}}
	rec := grpc.ChainStreamInterceptor(
		func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = status.Errorf(codes.Internal, "panic: %v", p)
				}
			}()
			return h(srv, ss)
		},
		grpclock.StreamServerInterceptor(c, append(tenantFirst, grpclock.NoWait())...),
	)
	cl := serve(t, svc, rec)
	ctx := testkit.Context(t, 20*time.Second)
	for i, want := range []codes.Code{codes.Internal, codes.OK} {
		u, err := cl.Upload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = u.Send(&testpb.Chunk{Tenant: "boom"})
		_, err = u.CloseAndRecv()
		if status.Code(err) != want {
			t.Fatalf("upload %d: %v, want %v", i, err, want)
		}
	}
}
