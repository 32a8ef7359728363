package grpclock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// With Redis killed, calls are refused Unavailable with a retry hint
// (fail-closed, the default) and never reach their handler; with FailOpen
// the handler runs without a lease and the Observer is told.
func TestRedisKilled(t *testing.T) {
	srv := redistest.Start(t)
	var ran atomic.Int32
	var leased atomic.Int32
	svc := &service{
		keyed: func(ctx context.Context, _ *testpb.KeyedRequest) (*testpb.PayResponse, error) {
			ran.Add(1)
			if _, ok := core.LeaseFromContext(ctx); ok {
				leased.Add(1)
			}
			return &testpb.PayResponse{}, nil
		},
		ledger: func(_ *testpb.LedgerRequest, ss grpc.ServerStreamingServer[testpb.LedgerEntry]) error {
			ran.Add(1)
			if _, ok := core.LeaseFromContext(ss.Context()); ok {
				leased.Add(1)
			}
			return ss.Send(&testpb.LedgerEntry{Seq: 1})
		},
		upload: func(ss grpc.ClientStreamingServer[testpb.Chunk, testpb.UploadSummary]) error {
			if _, err := ss.Recv(); err != nil {
				return err
			}
			ran.Add(1)
			if _, ok := core.LeaseFromContext(ss.Context()); ok {
				leased.Add(1)
			}
			return ss.SendAndClose(&testpb.UploadSummary{Chunks: 1})
		},
	}
	closedRec, openRec := newRecorder(), newRecorder()
	closedC := newClient(t, srv, core.WithObserver(closedRec))
	openC := newClient(t, srv, core.WithObserver(openRec))
	closed := serve(t, svc, unary(closedC), stream(closedC, accountKey))
	closedUp := serve(t, svc, stream(closedC, tenantFirst...))
	open := serve(t, svc, unary(openC, grpclock.FailOpen()), stream(openC, accountKey, grpclock.FailOpen()))
	openUp := serve(t, svc, stream(openC, append(tenantFirst, grpclock.FailOpen())...))
	ctx := metadata.AppendToOutgoingContext(testkit.Context(t, 30*time.Second), "x-account", "a-1")

	if _, err := closed.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "1"}); err != nil {
		t.Fatalf("before the kill: %v", err)
	}
	srv.Kill()
	ran.Store(0)
	leased.Store(0)

	t.Run("fail-closed", func(t *testing.T) {
		var trailer metadata.MD
		_, err := closed.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "1"}, grpc.Trailer(&trailer))
		wantRetryHint(t, wantCode(t, err, codes.Unavailable), trailer, time.Second)

		s, err := closed.Ledger(ctx, &testpb.LedgerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Recv()
		wantCode(t, err, codes.Unavailable)

		u, err := closedUp.Upload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = u.Send(&testpb.Chunk{Tenant: "t"})
		_, err = u.CloseAndRecv()
		wantCode(t, err, codes.Unavailable)
		if n := ran.Load(); n != 0 {
			t.Fatalf("%d handlers ran fail-closed", n)
		}
	})
	t.Run("fail-open", func(t *testing.T) {
		if _, err := open.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "1"}); err != nil {
			t.Fatal(err)
		}
		s, err := open.Ledger(ctx, &testpb.LedgerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		u, err := openUp.Upload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = u.Send(&testpb.Chunk{Tenant: "t"})
		if _, err := u.CloseAndRecv(); err != nil {
			t.Fatal(err)
		}
		if n, l := ran.Load(), leased.Load(); n != 3 || l != 0 {
			t.Fatalf("fail-open: %d handlers ran, %d with a lease; want 3 and 0", n, l)
		}
		if _, _, unlocked, _ := openRec.counts(); unlocked != 3 {
			t.Fatalf("Observer told of %d unlocked calls, want 3", unlocked)
		}
		if _, _, unlocked, _ := closedRec.counts(); unlocked != 0 {
			t.Fatalf("fail-closed Observer told of %d unlocked calls", unlocked)
		}
	})
}

// A client's distinct keys leave no trace: after 10,000 calls on distinct
// orders (some refused on a held one), the heap, collected, has grown by
// less than a few MiB and the Client's per-key tables are back at their
// baseline.
func TestFlood(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	cl := serve(t, &service{}, unary(c, grpclock.NoWait()))
	ctx := testkit.Context(t, 60*time.Second)
	pad := strings.Repeat("x", 64)
	if _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "warm"}); err != nil {
		t.Fatal(err)
	}
	base, heap0 := testkit.Tables(c), testkit.LiveHeap()
	held, err := c.Acquire(ctx, "order:held")
	if err != nil {
		t.Fatal(err)
	}
	const n, workers = 10_000, 8
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: fmt.Sprintf("%05d-%s", i, pad)}); err == nil {
					ok.Add(1)
				}
				if i%50 == 0 {
					if _, err := cl.PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "held"}); status.Code(err) == codes.Aborted {
						refused.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ok.Load() != n || refused.Load() != n/50 {
		t.Fatalf("%d of %d calls served, %d of %d refused on the held order", ok.Load(), n, refused.Load(), n/50)
	}
	testkit.WaitFor(t, 10*time.Second, "the tables to be back at their baseline", func() bool {
		for k, v := range testkit.Tables(c) {
			if v > base[k] {
				return false
			}
		}
		return true
	})
	const tolerance = 4 << 20
	if grown := testkit.LiveHeap() - heap0; grown > tolerance {
		t.Errorf("heap grew by %d KiB over %d distinct keys (tolerance %d KiB)", grown>>10, n, tolerance>>10)
	}
}
