package grpclock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/guard/rpckey"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// hedgingConfig is gRFC A6's hedging policy for Pay: three copies at once.
const hedgingConfig = `{"methodConfig": [{
	"name": [{"service": "lockkit.grpclock.test.v1.Test", "method": "Pay"}],
	"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0s", "nonFatalStatusCodes": []}
}]}`

// hedge is gRFC A6's hedging as a client interceptor, for grpc-go, which
// parses a hedgingPolicy but does not send hedged copies (grpc-go#2823):
// n copies of a call at once on one connection, the first OK answer is
// the call's and the other copies are cancelled; a copy failing with a
// status that is not non-fatal (nonFatalStatusCodes is empty) fails the
// call, as A6 says.
func hedge(n int, sent *atomic.Int32) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type answer struct {
			reply  *testpb.PayResponse
			header metadata.MD
			err    error
		}
		answers := make(chan answer, n)
		for range n {
			sent.Add(1)
			go func() { // each copy its own reply and header, as A6's attempts
				a := answer{reply: new(testpb.PayResponse)}
				a.err = invoker(ctx, method, req, a.reply, cc, grpc.Header(&a.header))
				answers <- a
			}()
		}
		a := <-answers // the first answer decides, OK or fatal
		if a.err == nil {
			proto.Merge(reply.(*testpb.PayResponse), a.reply)
			for _, o := range opts {
				if h, ok := o.(grpc.HeaderCallOption); ok {
					*h.HeaderAddr = a.header
				}
			}
		}
		cancel()
		for range n - 1 {
			<-answers
		}
		return a.err
	}
}

// claimsSeen hears each time a claim was found in progress.
type claimsSeen struct {
	core.NopObserver
	seen chan struct{}
}

func (c *claimsSeen) Contended(_ context.Context, info core.AcquireInfo, _ core.Holder, _ int) {
	if info.Kind == core.KindClaim {
		c.seen <- struct{}{}
	}
}

// A client hedging a payment (three copies at once, gRFC A6's
// hedgingPolicy with hedgingDelay 0) runs it once: every copy that reaches
// the server while the first runs waits for its answer (IdempotencyWait),
// so none fails the hedged call, and the client sees the one run's answer.
func TestHedgedCallRunsOnce(t *testing.T) {
	srv := redistest.Start(t)
	var runs, attempts, sent atomic.Int32
	var ran atomic.Int64 // the run's fencing token
	contended := &claimsSeen{seen: make(chan struct{}, 8)}
	svc := &service{pay: func(ctx context.Context, r *testpb.PayRequest) (*testpb.PayResponse, error) {
		l, _ := core.ClaimFromContext(ctx)
		runs.Add(1)
		ran.Store(l.Token())
		for range 2 { // both other copies found the claim in progress
			<-contended.seen
		}
		return &testpb.PayResponse{Token: l.Token()}, nil
	}}
	count := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		attempts.Add(1)
		return h(ctx, req)
	}, grpclock.IdempotentUnaryServerInterceptor(newClient(t, srv, core.WithObserver(contended)),
		grpclock.IdempotencyRequired(), grpclock.IdempotencyWait(20*time.Second)))
	conn := serveConn(t, svc, []grpc.DialOption{grpc.WithDefaultServiceConfig(hedgingConfig), grpc.WithUnaryInterceptor(hedge(3, &sent))}, count)
	ctx := metadata.AppendToOutgoingContext(testkit.Context(t, 30*time.Second), "idempotency-key", "pay-1")
	resp, err := testpb.NewTestClient(conn).Pay(ctx, &testpb.PayRequest{OrderId: "1"})
	if err != nil {
		t.Fatalf("the hedged call failed: %v", err)
	}
	if runs.Load() != 1 || attempts.Load() != 3 || sent.Load() != 3 {
		t.Fatalf("%d copies sent, %d reached the server, the handler ran %d times; want 3, 3, 1", sent.Load(), attempts.Load(), runs.Load())
	}
	if resp.GetToken() <= 0 {
		t.Errorf("the answer %v carries no fencing token", resp)
	}
	if resp.GetToken() != ran.Load() {
		t.Errorf("the client's answer %v, want the run's token %d", resp, ran.Load())
	}
	// A later retry of the same payment is the same answer, replayed.
	var h2 metadata.MD
	again, err := testpb.NewTestClient(conn).Pay(ctx, &testpb.PayRequest{OrderId: "1"}, grpc.Header(&h2))
	if err != nil || again.GetToken() != resp.GetToken() || runs.Load() != 1 {
		t.Fatalf("retry: %v %v after %d runs; want %v, one run", again, err, runs.Load(), resp)
	}
	if v := h2.Get(rpckey.MetadataIdempotentReplayed); len(v) != 1 || v[0] != "true" {
		t.Errorf("the retry's header %v, want it marked replayed", h2)
	}
}
