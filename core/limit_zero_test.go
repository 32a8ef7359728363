package core_test

import (
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Request.Limit 0 is the key's mutex, the lock of Client.Acquire; Limit 1
// is a semaphore of one permit, another lock (testkit.LimitZeroIsTheMutex
// holds each and asks for the others).
func TestRequestLimitZeroIsTheMutex(t *testing.T) {
	srv := redistest.Start(t)
	c := testkit.Client(t, srv.NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	testkit.LimitZeroIsTheMutex(t, ctx, c, "export:t1", func(route string) core.Outcome {
		var l *core.Lease
		var err error
		switch route {
		case testkit.NoLimit:
			l, err = c.TryAcquire(ctx, "export:t1")
		case testkit.LimitZero:
			l, err = c.AcquireRequest(ctx, "export:t1", core.Request{Limit: 0, NoWait: true})
		case testkit.LimitOne:
			l, err = c.AcquireRequest(ctx, "export:t1", core.Request{Limit: 1, NoWait: true})
		}
		if err != nil {
			return core.Classify(ctx, err)
		}
		_ = l.Release(ctx)
		return core.OutcomeAcquired
	})
}
