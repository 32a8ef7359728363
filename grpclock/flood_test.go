package grpclock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// TestDeadlineFloodKeepsSharedLocksBounded: gRPC clients whose deadlines
// (0.2 to 3 ms) end while the interceptor acquires, on a semaphore and on
// both sides of a read/write lock served by two replicas, thousands of
// them: each gives its token (and its place in the wait queue) back, and
// each give-back leaves a tombstone. Every lock hash stays within what its
// holders, waiting processes and at most 128 tombstones take (two fields
// each; docs/key-layout.md), sampled every 100 calls ended by their
// deadlines; before tombstones were bounded it grew by a field per
// give-back. Redis keeps answering: calls with a deadline of a second go in.
func TestDeadlineFloodKeepsSharedLocksBounded(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 2*time.Minute)
	const (
		replicas = 2
		callers  = 12
		flood    = 3000
	)
	var clients []testpb.TestClient
	for range replicas {
		c := newClient(t, srv)
		clients = append(clients,
			serve(t, &service{}, unary(c, grpclock.Key(grpclock.Const("flood")), grpclock.Limit(2))),
			serve(t, &service{}, unary(c, grpclock.Key(grpclock.Const("doc")), grpclock.ReadSide())),
			serve(t, &service{}, unary(c, grpclock.Key(grpclock.Const("doc")), grpclock.WriteSide())))
	}
	// The bound of a hash: B, f, r and Y; p, d and A per holder (a
	// semaphore of 2, or readers: one per caller and one more each given
	// back but not gone yet); Q and I per replica and side, twice (a queue
	// on its way out); Z and its slot per tombstone.
	bound := int64(4 + 3*2*callers + 2*replicas*2*2 + 2*128)
	var ended, most atomic.Int64
	sample := func() {
		keys, err := srv.Client.Keys(ctx, "lockkit:v1:[rs]k:*").Result()
		if err != nil {
			t.Error(err)
			return
		}
		for _, k := range keys {
			n, err := srv.Client.HLen(ctx, k).Result()
			if err != nil {
				t.Error(err)
				return
			}
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
	}
	var wg sync.WaitGroup
	for i := range callers {
		cl := clients[i%len(clients)]
		wg.Go(func() {
			for ended.Load() < flood && ctx.Err() == nil {
				cctx, cancel := context.WithTimeout(ctx, 200*time.Microsecond+rand.N(2800*time.Microsecond))
				_, err := cl.Pay(cctx, &testpb.PayRequest{})
				cancel()
				switch status.Code(err) {
				case codes.OK, codes.ResourceExhausted, codes.Aborted:
				case codes.DeadlineExceeded:
					if n := ended.Add(1); n%100 == 0 {
						sample()
					}
				default:
					t.Errorf("caller %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	sample()
	t.Logf("%d calls ended by their deadlines; the largest lock hash had %d fields (bound %d)", ended.Load(), most.Load(), bound)
	if most.Load() > bound {
		t.Errorf("a lock hash reached %d fields, more than the %d its holders, waiting processes and tombstones take", most.Load(), bound)
	}
	for _, cl := range clients {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cl.Pay(cctx, &testpb.PayRequest{}, grpc.WaitForReady(true))
		cancel()
		if err != nil {
			t.Errorf("a call after the flood: %v", err)
		}
	}
}
