package core_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// pipeCounter counts pipelines and the commands they carried.
type pipeCounter struct{ pipes, cmds atomic.Int64 }

func (c *pipeCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (c *pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (c *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.pipes.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// One renewal goroutine per Client, whatever the number of leases, and
// renewals due together travel together: 20 leases taken at once are
// renewed in a few pipelines, not 20 round trips.
func TestRenewalsBatchedByOneGoroutine(t *testing.T) {
	srv := redistest.Start(t)
	pc := &pipeCounter{}
	rdb := srv.NewClient()
	rdb.AddHook(pc)
	rec := newRecorder()
	c := newClientOn(t, rdb, core.WithTTL(1500*time.Millisecond), core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	first, err := c.Acquire(ctx, "batch:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release(ctx)
	base := runtime.NumGoroutine()
	for i := 1; i < 20; i++ {
		l, err := c.Acquire(ctx, fmt.Sprint("batch:", i))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
	}
	if grown := runtime.NumGoroutine() - base; grown > 1 {
		t.Fatalf("19 more leases started %d goroutines", grown)
	}
	testkit.WaitFor(t, 10*time.Second, "every lease renewed once", func() bool { _, _, n, _ := rec.snapshot(); return n >= 20 })
	if pipes, cmds := pc.pipes.Load(), pc.cmds.Load(); pipes > 4 || cmds < 20 {
		t.Fatalf("20 renewals in %d pipelines (%d commands): not batched", pipes, cmds)
	}
}
