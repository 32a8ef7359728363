package grpclock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Calls on different orders hold their locks at the same time: every
// handler must reach a barrier that only opens when all of them are inside.
func TestUnaryDifferentOrdersRunInParallel(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	const n = 4
	var barrier sync.WaitGroup
	barrier.Add(n)
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		if _, ok := core.LeaseFromContext(ctx); !ok {
			return nil, status.Error(codes.FailedPrecondition, "handler ran without a lease")
		}
		barrier.Done()
		all := make(chan struct{})
		go func() { barrier.Wait(); close(all) }()
		select {
		case <-all:
			return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
		case <-time.After(15 * time.Second):
			return nil, status.Error(codes.DeadlineExceeded, "barrier: the other orders never ran alongside")
		}
	}}
	cl := serve(t, svc, unary(c, grpclock.Wait(20*time.Second)))
	ctx := testkit.Context(t, 30*time.Second)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "par-" + strconv.Itoa(i)})
			errs <- err
		}()
	}
	for range n {
		if err := testkit.Recv(t, errs, 10*time.Second, "errs"); err != nil {
			t.Fatal(err)
		}
	}
}

// A duplicate call with NoWait is answered Aborted with a retry hint: the
// RetryInfo detail and the grpc-retry-pushback-ms trailer, 1s by default or
// what RetryAfter says.
func TestUnaryNoWaitDuplicateAborted(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpclock.Option
		want time.Duration
	}{
		{"default hint", nil, time.Second},
		{"RetryAfter", []grpclock.Option{grpclock.RetryAfter(func(err error) time.Duration {
			if !errors.Is(err, core.ErrNotAcquired) {
				return time.Hour
			}
			return 250 * time.Millisecond
		})}, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := newClient(t, srv)
			entered, leave := make(chan struct{}), make(chan struct{})
			var once sync.Once
			svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
				once.Do(func() {
					close(entered)
					<-leave
				})
				return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
			}}
			cl := serve(t, svc, unary(c, append([]grpclock.Option{grpclock.NoWait()}, tc.opts...)...))
			ctx := testkit.Context(t, 20*time.Second)
			first := make(chan error, 1)
			go func() {
				_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "dup"})
				first <- err
			}()
			<-entered
			var trailer metadata.MD
			_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "dup"}, grpc.Trailer(&trailer))
			st := wantCode(t, err, codes.Aborted)
			wantRetryHint(t, st, trailer, tc.want)
			if strings.Contains(st.Message(), c.Owner()) {
				t.Fatalf("message %q names the holder", st.Message())
			}
			close(leave)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			// The lock was released: the same call goes through now.
			if _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "dup"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A stock gRPC client whose retry policy covers ABORTED waits for the
// pushback and tries again: the second attempt gets the lock once the
// holder is gone.
func TestUnaryClientRetryHonoursPushback(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	entered, leave := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-leave
		}
		return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
	}}
	const cfg = `{"methodConfig":[{"name":[{"service":"lockkit.grpclock.test.v1.Test"}],
		"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["ABORTED"]}}]}`
	conn := serveConn(t, svc, []grpc.DialOption{grpc.WithDefaultServiceConfig(cfg)},
		unary(c, grpclock.NoWait(), grpclock.RetryAfter(func(error) time.Duration { return 300 * time.Millisecond })))
	cl := testpb.NewTestClient(conn)
	ctx := testkit.Context(t, 20*time.Second)
	first := make(chan error, 1)
	go func() {
		_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "retry"})
		first <- err
	}()
	testkit.Recv(t, entered, 10*time.Second, "entered")
	second := make(chan error, 1)
	go func() {
		_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "retry"})
		second <- err
	}()
	// The second call's first attempt is refused; then let the holder go.
	for {
		e := testkit.Recv(t, rec.endCh, 10*time.Second, "rec.endCh")
		if e.res.Outcome == core.OutcomeContended {
			break
		}
	}
	refusedAt := time.Now()
	close(leave)
	if err := testkit.Recv(t, first, 10*time.Second, "first"); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, second, 10*time.Second, "second"); err != nil {
		t.Fatalf("retried call: %v", err)
	}
	// The client's own backoff is 10ms: only the 300ms pushback makes it wait longer.
	if waited := time.Since(refusedAt); waited < 250*time.Millisecond {
		t.Fatalf("the retry came %v after the refusal, before the 300ms pushback", waited)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

// The handler's context carries the lease: key from LockKey (order:<id>,
// the key the HTTP adapters build), the full method only as its name.
func TestUnaryHandlerContext(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	type seen struct {
		key, name string
		ttl       time.Duration
	}
	got := make(chan seen, 1)
	svc := &service{keyed: func(ctx context.Context, _ *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		l, ok := core.LeaseFromContext(ctx)
		if !ok {
			return nil, status.Error(codes.FailedPrecondition, "no lease")
		}
		got <- seen{l.Key(), l.Name(), l.TTL()}
		return &testpb.PayResponse{Token: l.Token()}, nil
	}}
	// TTL reaches the lease; AcquireOptions and ReleaseTimeout are accepted.
	cl := serve(t, svc, unary(c, grpclock.TTL(7*time.Second), grpclock.AcquireOptions(core.MaxWaiters(5)), grpclock.ReleaseTimeout(time.Second)))
	resp, err := cl.PayKeyed(testkit.Context(t, 10*time.Second), &testpb.KeyedRequest{OrderId: "42"})
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Recv(t, got, 10*time.Second, "got")
	// The name is otelgrpc's for the call (span name, rpc.method): the full
	// method without its leading slash, so lock and RPC telemetry join.
	if s.key != "order:42" || s.name != "lockkit.grpclock.test.v1.Test/PayKeyed" || s.ttl != 7*time.Second {
		t.Fatalf("lease key %q name %q ttl %v", s.key, s.name, s.ttl)
	}
	if resp.GetToken() <= 0 {
		t.Fatalf("token %d", resp.GetToken())
	}
}

// Key sources that fail: no source at all is the server's mistake
// (Internal), an empty LockKey value or a missing metadata part the
// caller's (InvalidArgument).
func TestUnaryKeySourceErrors(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ran := make(chan struct{}, 10)
	svc := &service{
		pay: func(context.Context, *testpb.PayRequest) (*testpb.PayResponse, error) {
			ran <- struct{}{}
			return &testpb.PayResponse{}, nil
		},
		keyed: func(context.Context, *testpb.KeyedRequest) (*testpb.PayResponse, error) {
			ran <- struct{}{}
			return &testpb.PayResponse{}, nil
		},
	}
	logs := captureGRPCLog(t)
	def := serve(t, svc, unary(c))
	md := serve(t, svc, unary(c, grpclock.Key(grpclock.Const("tenant"), grpclock.Metadata("X-Tenant"))))
	ctx := testkit.Context(t, 20*time.Second)

	_, err := def.Pay(ctx, &testpb.PayRequest{OrderId: "1"})
	st := wantCode(t, err, codes.Internal)
	if strings.Contains(st.Message(), "no LockKey() method") || !strings.Contains(st.Message(), testpb.Test_Pay_FullMethodName) || logs.Count("no LockKey() method") != 1 {
		t.Fatalf("message %q, or the log (%d lines), does not say what is missing only to the server", st.Message(), logs.Count())
	}
	_, err = def.PayKeyed(ctx, &testpb.KeyedRequest{})
	st = wantCode(t, err, codes.InvalidArgument)
	if !strings.Contains(st.Message(), "empty") {
		t.Fatalf("message %q", st.Message())
	}
	_, err = md.Pay(ctx, &testpb.PayRequest{})
	st = wantCode(t, err, codes.InvalidArgument)
	if !strings.Contains(st.Message(), `metadata "x-tenant"`) {
		t.Fatalf("message %q does not name the part", st.Message())
	}
	twice := metadata.AppendToOutgoingContext(ctx, "x-tenant", "a", "x-tenant", "b")
	_, err = md.Pay(twice, &testpb.PayRequest{})
	wantCode(t, err, codes.InvalidArgument)
	if len(ran) != 0 {
		t.Fatal("a handler ran without a key")
	}
	// With the metadata the call goes through under tenant:acme.
	keyed := make(chan string, 1)
	svc.pay = func(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayResponse, error) {
		l, _ := core.LeaseFromContext(ctx)
		keyed <- l.Key()
		return &testpb.PayResponse{}, nil
	}
	if _, err := md.Pay(metadata.AppendToOutgoingContext(ctx, "x-tenant", "acme"), &testpb.PayRequest{}); err != nil {
		t.Fatal(err)
	}
	if k := testkit.Recv(t, keyed, 10*time.Second, "keyed"); k != "tenant:acme" {
		t.Fatalf("key %q", k)
	}
}

// KeyFromRoute locks the method whatever the message says.
func TestUnaryKeyFromRoute(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	entered, leave := make(chan struct{}), make(chan struct{})
	keys := make(chan string, 2)
	svc := &service{pay: func(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
		l, _ := core.LeaseFromContext(ctx)
		keys <- l.Key()
		if r.GetOrderId() == "a" {
			close(entered)
			<-leave
		}
		return &testpb.PayResponse{}, nil
	}}
	cl := serve(t, svc, unary(c, grpclock.KeyFromRoute(), grpclock.NoWait()))
	ctx := testkit.Context(t, 20*time.Second)
	first := make(chan error, 1)
	go func() { _, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "a"}); first <- err }()
	testkit.Recv(t, entered, 10*time.Second, "entered")
	_, err := cl.Pay(ctx, &testpb.PayRequest{OrderId: "b"})
	wantCode(t, err, codes.Aborted)
	close(leave)
	if err := testkit.Recv(t, first, 10*time.Second, "first"); err != nil {
		t.Fatal(err)
	}
	if k := testkit.Recv(t, keys, 10*time.Second, "keys"); k != testpb.Test_Pay_FullMethodName {
		t.Fatalf("key %q, want the full method", k)
	}
}

// A call whose deadline passes while it waits gets DeadlineExceeded from
// the interceptor (not Aborted: the wait budget was not spent). The deadline
// is set on the server (by an outer interceptor): a client-side deadline
// races the client's own cancellation (RST_STREAM), which reads as Canceled.
func TestUnaryDeadlineWhileWaiting(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := newClient(t, srv, core.WithObserver(rec))
	entered, leave := make(chan struct{}), make(chan struct{})
	kinds := make(chan core.Outcome, 1)
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		close(entered)
		<-leave
		return &testpb.PayResponse{}, nil
	}}
	deadline := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if req.(*testpb.KeyedRequest).GetOrderId() == "dl-short" {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
		}
		return h(ctx, req)
	}
	cl := serve(t, svc, grpc.ChainUnaryInterceptor(deadline, grpclock.UnaryServerInterceptor(c, grpclock.Wait(time.Minute),
		grpclock.Key(grpclock.Const("order"), grpclock.Func("dl", func(*grpclock.Call) (string, error) { return "dl", nil })),
		grpclock.OnUnavailable(func(ctx context.Context, r *grpclock.Rejection) error {
			kinds <- r.Outcome
			return nil // Answer's
		}),
		grpclock.OnClientGone(func(ctx context.Context, r *grpclock.Rejection) error {
			kinds <- r.Outcome
			return grpclock.Answer(ctx, r)
		}))))
	ctx := testkit.Context(t, 20*time.Second)
	first := make(chan error, 1)
	go func() { _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "dl"}); first <- err }()
	testkit.Recv(t, entered, 10*time.Second, "entered")
	_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "dl-short"})
	wantCode(t, err, codes.DeadlineExceeded)
	if k := testkit.Recv(t, kinds, 10*time.Second, "kinds"); k != core.OutcomeDeadline {
		t.Fatalf("interceptor outcome %v, want deadline_exceeded", k)
	}
	// A caller that hangs up while waiting: the interceptor sees Canceled.
	gone, hangUp := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { _, err := cl.PayKeyed(gone, &testpb.KeyedRequest{OrderId: "dl-gone"}); waited <- err }()
	testkit.WaitFor(t, 10*time.Second, "the second caller to wait", func() bool {
		starts, _, _, _ := rec.counts() // holder, dl-short, dl-gone (queued locally behind the holder)
		return starts >= 3
	})
	hangUp()
	wantCode(t, <-waited, codes.Canceled)
	if k := testkit.Recv(t, kinds, 10*time.Second, "kinds"); k != core.OutcomeCanceled {
		t.Fatalf("interceptor outcome %v, want canceled", k)
	}
	close(leave)
	if err := testkit.Recv(t, first, 10*time.Second, "first"); err != nil {
		t.Fatal(err)
	}
}

// An On* option replaces the answer of its outcomes only; a RetryInfo in
// its status still makes the trailer.
func TestUnaryErrorHandlerOverride(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	entered, leave := make(chan struct{}), make(chan struct{})
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		close(entered)
		<-leave
		return &testpb.PayResponse{}, nil
	}}
	cl := serve(t, svc, unary(c, grpclock.NoWait(), grpclock.OnContended(func(ctx context.Context, r *grpclock.Rejection) error {
		return status.Errorf(codes.ResourceExhausted, "busy: %s", r.Key)
	})))
	ctx := testkit.Context(t, 20*time.Second)
	first := make(chan error, 1)
	go func() { _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "eh"}); first <- err }()
	testkit.Recv(t, entered, 10*time.Second, "entered")
	var trailer metadata.MD
	_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "eh"}, grpc.Trailer(&trailer))
	st := wantCode(t, err, codes.ResourceExhausted)
	if st.Message() != "busy: order:eh" || len(trailer.Get(grpclock.PushbackTrailer)) != 0 {
		t.Fatalf("message %q trailer %v", st.Message(), trailer)
	}
	_, err = cl.PayKeyed(ctx, &testpb.KeyedRequest{})
	wantCode(t, err, codes.InvalidArgument)
	close(leave)
	if err := testkit.Recv(t, first, 10*time.Second, "first"); err != nil {
		t.Fatal(err)
	}
}

// A responder's status with two RetryInfo details makes one pushback
// trailer, from the first detail: what a client reading the detail takes,
// and one value, as gRPC's own retry needs.
func TestUnaryResponderPushbackIsFirstRetryInfo(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	cl := serve(t, &service{}, unary(c, grpclock.OnBadKey(func(ctx context.Context, r *grpclock.Rejection) error {
		st, err := status.New(codes.InvalidArgument, "no order").WithDetails(
			&errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(5 * time.Second)})
		if err != nil {
			t.Error(err)
		}
		return st.Err()
	})))
	var trailer metadata.MD
	_, err := cl.PayKeyed(testkit.Context(t, 20*time.Second), &testpb.KeyedRequest{}, grpc.Trailer(&trailer))
	if st := wantCode(t, err, codes.InvalidArgument); len(st.Details()) != 2 {
		t.Fatalf("details %v, want the responder's two", st.Details())
	}
	if got := trailer.Get(grpclock.PushbackTrailer); len(got) != 1 || got[0] != "2000" {
		t.Fatalf("trailer %s = %q, want [\"2000\"] (the first RetryInfo)", grpclock.PushbackTrailer, got)
	}
}

var toInternal = recovery.WithRecoveryHandler(func(p any) error {
	return status.Errorf(codes.Internal, "panic: %v", p)
})

// A handler panic never strands the lock, whether recovery sits inside the
// lock (the documented place) or outside it.
func TestUnaryPanicReleases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chain func(lock grpc.UnaryServerInterceptor) grpc.ServerOption
	}{
		{"recovery inside", func(l grpc.UnaryServerInterceptor) grpc.ServerOption {
			return grpc.ChainUnaryInterceptor(l, recovery.UnaryServerInterceptor(toInternal))
		}},
		{"recovery outside", func(l grpc.UnaryServerInterceptor) grpc.ServerOption {
			return grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(toInternal), l)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := newClient(t, srv)
			svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
				if r.GetOrderId() == "boom" {
					panic("handler exploded")
				}
				return &testpb.PayResponse{}, nil
			}}
			cl := serve(t, svc, tc.chain(grpclock.UnaryServerInterceptor(c, grpclock.NoWait())))
			ctx := testkit.Context(t, 20*time.Second)
			_, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "boom"})
			wantCode(t, err, codes.Internal)
			if _, ok, err := c.Inspect(ctx, "order:boom"); err != nil || ok {
				t.Fatalf("lock still held after the panic (held %v, err %v)", ok, err)
			}
		})
	}
}

// The lease is lost while the handler runs (its Redis key deleted, TTL 1s):
// the handler's context ends with cause ErrLost and the caller gets Aborted,
// not a misleading Canceled.
func TestUnaryLeaseLost(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	entered := make(chan struct{})
	causes := make(chan error, 1)
	svc := &service{keyed: func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		close(entered)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(15 * time.Second):
			causes <- nil
			return nil, errors.New("handler context not cancelled")
		}
	}}
	relErr := make(chan error, 1)
	cl := serve(t, svc, unary(c, grpclock.TTL(time.Second), grpclock.OnReleaseError(func(_ context.Context, _ string, err error) { relErr <- err })))
	ctx := testkit.Context(t, 20*time.Second)
	done := make(chan error, 1)
	go func() { _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "lost"}); done <- err }()
	testkit.Recv(t, entered, 10*time.Second, "entered")
	if n, err := srv.Client.Del(ctx, "lockkit:v1:k:order:lost").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v", n, err)
	}
	if cause := testkit.Recv(t, causes, 10*time.Second, "causes"); !errors.Is(cause, core.ErrLost) {
		t.Fatalf("handler ctx cause = %v, want ErrLost", cause)
	}
	st := wantCode(t, <-done, codes.Aborted)
	if !strings.Contains(st.Message(), "lost") {
		t.Fatalf("message %q", st.Message())
	}
	// Reported at release as by every adapter: the release-error hook.
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrLost) {
		t.Fatalf("OnReleaseError got %v, want ErrLost", err)
	}
}

// Construction refuses what could only fail later.
func TestConstructionPanics(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"stream without key source", func() { grpclock.StreamServerInterceptor(c) }, "no key source"},
		{"stream Field without FromFirstMessage", func() {
			grpclock.StreamServerInterceptor(c, grpclock.Key(grpclock.Field("tenant")))
		}, "FromFirstMessage"},
		{"empty Key", func() { grpclock.UnaryServerInterceptor(c, grpclock.Key()) }, "at least one part"},
		{"empty Const", func() { grpclock.Const("") }, "empty key part"},
		{"empty Metadata", func() { grpclock.Metadata("") }, "empty metadata key"},
		{"bad Field path", func() { grpclock.Field("order..id") }, "empty path segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want one saying %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}

// The options every adapter shares are accepted or refused as in every
// other adapter (conformance.OptionCases), by both interceptors.
func TestSharedOptionCases(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	for _, kind := range []string{"UnaryServerInterceptor", "StreamServerInterceptor"} {
		t.Run(kind, func(t *testing.T) {
			conformance.RunOptionCases(t, "grpclock: "+kind+": ", func(tc conformance.OptionCase) error {
				opts := []grpclock.Option{grpclock.Key(grpclock.Const("k")), grpclock.Wait(tc.Wait), grpclock.TTL(tc.TTL), grpclock.MaxHold(tc.MaxHold),
					grpclock.ReleaseTimeout(tc.ReleaseTimeout), grpclock.AcquireOptions(tc.AcquireOptions...)}
				if tc.NoWait {
					opts = append(opts, grpclock.NoWait())
				}
				opts = append(opts, conformance.KindOptions(tc, grpclock.Limit, grpclock.ReadSide, grpclock.WriteSide, func() grpclock.Option { return grpclock.Key(grpclock.Const("k2")) })...)
				client := c
				if tc.NoClient {
					client = nil
				}
				if kind == "UnaryServerInterceptor" {
					return conformance.Panic(func() { grpclock.UnaryServerInterceptor(client, opts...) })
				}
				return conformance.Panic(func() { grpclock.StreamServerInterceptor(client, opts...) })
			})
		})
	}
}
