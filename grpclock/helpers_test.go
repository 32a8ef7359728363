package grpclock_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a lock Client on its own go-redis client (as another
// replica would have), closed at cleanup.
func newClient(t testing.TB, srv *redistest.Server, opts ...core.Option) *core.Client {
	t.Helper()
	return testkit.Client(t, srv.NewClient(), opts...)
}

// service is the test service; each test sets the handlers it calls.
type service struct {
	testpb.UnimplementedTestServer
	pay    func(context.Context, *testpb.PayRequest) (*testpb.PayResponse, error)
	keyed  func(context.Context, *testpb.KeyedRequest) (*testpb.PayResponse, error)
	ledger func(*testpb.LedgerRequest, grpc.ServerStreamingServer[testpb.LedgerEntry]) error
	upload func(grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error
}

// tokenOf is the fencing token of the lease ctx carries (0: none).
func tokenOf(ctx context.Context) int64 {
	if l, ok := core.LeaseFromContext(ctx); ok {
		return l.Token()
	}
	return 0
}

func (s *service) Pay(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
	if s.pay != nil {
		return s.pay(ctx, r)
	}
	return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
}

func (s *service) PayKeyed(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
	if s.keyed != nil {
		return s.keyed(ctx, r)
	}
	return &testpb.PayResponse{Token: tokenOf(ctx)}, nil
}

func (s *service) Ledger(r *testpb.LedgerRequest, ss grpc.ServerStreamingServer[testpb.LedgerEntry]) error {
	return s.ledger(r, ss)
}

func (s *service) Upload(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
	return s.upload(ss)
}

// serve starts a real gRPC server on a loopback listener and returns a
// client connected to it; both stop at cleanup.
func serve(t testing.TB, svc *service, opts ...grpc.ServerOption) testpb.TestClient {
	t.Helper()
	return testpb.NewTestClient(serveConn(t, svc, nil, opts...))
}

func serveConn(t testing.TB, svc *service, dial []grpc.DialOption, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	testpb.RegisterTestServer(s, svc)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-done
	})
	return conn
}

func unary(c *core.Client, opts ...grpclock.Option) grpc.ServerOption {
	return grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(c, opts...))
}

func stream(c *core.Client, opts ...grpclock.Option) grpc.ServerOption {
	return grpc.ChainStreamInterceptor(grpclock.StreamServerInterceptor(c, opts...))
}

// wantCode fails unless err is a status with code c.
func wantCode(t testing.TB, err error, c codes.Code) *status.Status {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != c {
		t.Fatalf("error = %v, want code %v", err, c)
	}
	return st
}

// wantRetryHint checks the RetryInfo detail and the pushback trailer.
func wantRetryHint(t testing.TB, st *status.Status, trailer metadata.MD, d time.Duration) {
	t.Helper()
	var ri *errdetails.RetryInfo
	for _, det := range st.Details() {
		if r, ok := det.(*errdetails.RetryInfo); ok {
			ri = r
		}
	}
	if ri == nil || ri.GetRetryDelay().AsDuration() != d {
		t.Fatalf("RetryInfo = %v, want delay %v (details %v)", ri, d, st.Details())
	}
	want := []string{strconv.FormatInt(d.Milliseconds(), 10)}
	if got := trailer.Get(grpclock.PushbackTrailer); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("trailer %s = %q, want %q", grpclock.PushbackTrailer, got, want)
	}
}

// recorder is an Observer that keeps acquire outcomes and fail-open events.
type recorder struct {
	core.NopObserver
	mu        sync.Mutex
	starts    int
	ends      []end
	contended int
	unlocked  int
	lost      int
	endCh     chan end
}

type end struct {
	info core.AcquireInfo
	res  core.AcquireResult
}

func newRecorder() *recorder { return &recorder{endCh: make(chan end, 1024)} }

func (r *recorder) AcquireStart(ctx context.Context, _ core.AcquireInfo) context.Context {
	r.mu.Lock()
	r.starts++
	r.mu.Unlock()
	return ctx
}

func (r *recorder) Contended(context.Context, core.AcquireInfo, core.Holder, int) {
	r.mu.Lock()
	r.contended++
	r.mu.Unlock()
}

func (r *recorder) AcquireEnd(ctx context.Context, a core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	r.ends = append(r.ends, end{a, res})
	r.mu.Unlock()
	select {
	case r.endCh <- end{a, res}:
	default:
	}
	return ctx
}

func (r *recorder) Unlocked(context.Context, core.AcquireInfo, error) {
	r.mu.Lock()
	r.unlocked++
	r.mu.Unlock()
}

func (r *recorder) Lost(context.Context, core.LeaseInfo, error) {
	r.mu.Lock()
	r.lost++
	r.mu.Unlock()
}

func (r *recorder) counts() (starts, contended, unlocked, lost int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts, r.contended, r.unlocked, r.lost
}

// witness detects overlapping critical sections three ways: an overlap
// counter, a read-sleep-write counter that loses updates under overlap, and
// the fencing tokens in the order the sections began (strictly increasing
// when the lock serialised them).
type witness struct {
	mu      sync.Mutex
	inside  int
	overlap int
	count   int64
	tokens  []int64
}

func (w *witness) run(token int64, sleep time.Duration) {
	w.mu.Lock()
	w.inside++
	if w.inside > 1 {
		w.overlap++
	}
	w.tokens = append(w.tokens, token)
	v := w.count
	w.mu.Unlock()
	time.Sleep(sleep)
	w.mu.Lock()
	w.count = v + 1
	w.inside--
	w.mu.Unlock()
}

func (w *witness) result() (count int64, overlap int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count, w.overlap
}

// check fails unless n sections ran one at a time in token order.
func (w *witness) check(t testing.TB, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overlap != 0 || w.count != int64(n) {
		t.Fatalf("%d sections overlapped; read-sleep-write counter %d, want %d", w.overlap, w.count, n)
	}
	for i := 1; i < len(w.tokens); i++ {
		if w.tokens[i] <= w.tokens[i-1] {
			t.Fatalf("fencing token %d ran after %d (section %d)", w.tokens[i], w.tokens[i-1], i)
		}
	}
}
