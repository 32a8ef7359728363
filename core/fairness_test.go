package core_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Local hand-offs pass a hot lock inside one process in one round trip, but
// at most a bounded streak in a row: a waiter in another process still gets
// its turn while 8 goroutines of the first process keep the lock busy.
func TestHandoffDoesNotStarveOtherProcesses(t *testing.T) {
	srv := redistest.Start(t)
	busy := newClient(t, srv)
	other := newClient(t, srv)
	ctx := testkit.Context(t, 30*time.Second)
	stop := make(chan struct{})
	var cycles atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := busy.Acquire(ctx, "fair")
				if err != nil {
					t.Error(err)
					return
				}
				cycles.Add(1)
				_ = l.Release(ctx)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	testkit.WaitFor(t, 10*time.Second, "the hot loop running", func() bool { return cycles.Load() > 100 })
	for i := range 3 {
		before := cycles.Load()
		l, err := other.Acquire(ctx, "fair", core.Wait(10*time.Second))
		if err != nil {
			t.Fatalf("round %d: the other process starved: %v after %d hot cycles", i, err, cycles.Load()-before)
		}
		t.Logf("round %d: the other process got the lock after %d hot cycles", i, cycles.Load()-before)
		_ = l.Release(context.Background())
	}
}
