package core_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// newClient returns a Client on its own go-redis client (as a separate
// process would have), closed at cleanup.
func newClient(t testing.TB, srv *redistest.Server, opts ...core.Option) *core.Client {
	t.Helper()
	return newClientOn(t, srv.NewClient(), opts...)
}

func newClientOn(t testing.TB, rdb redis.UniversalClient, opts ...core.Option) *core.Client {
	t.Helper()
	return testkit.Client(t, rdb, opts...)
}

// recorder is an Observer that keeps every acquire result and lease event.
type recorder struct {
	core.NopObserver
	mu        sync.Mutex
	ends      []core.AcquireResult
	contended []core.Holder
	renewed   int
	renewErrs int
	lost      []error
	released  int
	meta      string
	endCh     chan core.AcquireResult
}

func newRecorder() *recorder { return &recorder{endCh: make(chan core.AcquireResult, 1024)} }

func (r *recorder) HolderMetadata(context.Context, core.AcquireInfo) string { return r.meta }
func (r *recorder) Contended(_ context.Context, _ core.AcquireInfo, h core.Holder, _ int) {
	r.mu.Lock()
	r.contended = append(r.contended, h)
	r.mu.Unlock()
}
func (r *recorder) AcquireEnd(ctx context.Context, _ core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	r.ends = append(r.ends, res)
	r.mu.Unlock()
	select {
	case r.endCh <- res:
	default:
	}
	return ctx
}
func (r *recorder) Renewed(_ context.Context, _ core.LeaseInfo, err error) {
	r.mu.Lock()
	if err == nil {
		r.renewed++
	} else {
		r.renewErrs++
	}
	r.mu.Unlock()
}
func (r *recorder) Lost(_ context.Context, _ core.LeaseInfo, cause error) {
	r.mu.Lock()
	r.lost = append(r.lost, cause)
	r.mu.Unlock()
}
func (r *recorder) Released(context.Context, core.LeaseInfo, error) {
	r.mu.Lock()
	r.released++
	r.mu.Unlock()
}
func (r *recorder) snapshot() (ends []core.AcquireResult, contended int, renewed int, lost int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.AcquireResult(nil), r.ends...), len(r.contended), r.renewed, len(r.lost)
}

// lostCauses are the causes Lost was told, in order.
func (r *recorder) lostCauses() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.lost...)
}

// renewCalls counts every Renewed call, confirmed or failed.
func (r *recorder) renewCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewed + r.renewErrs
}

// queuedInRedis tells whether the lock stored at hashKey has an entry of
// its wait queue in Redis whose field starts with prefix ("Q": anyone's,
// "Qw": a writer's, "Qs": a semaphore's).
func queuedInRedis(ctx context.Context, srv *redistest.Server, hashKey, prefix string) bool {
	return slices.ContainsFunc(srv.Client.HKeys(ctx, hashKey).Val(), func(f string) bool { return strings.HasPrefix(f, prefix) })
}

// waitQueuedInRedis waits until queuedInRedis holds: a waiter that began
// to wait is queued in Redis only after its first refusal.
func waitQueuedInRedis(t testing.TB, ctx context.Context, srv *redistest.Server, hashKey, prefix string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("a %s entry in the wait queue of %s in Redis", prefix, hashKey), func() bool {
		return queuedInRedis(ctx, srv, hashKey, prefix)
	})
}

// startAckingReplica starts a replica of primary and returns once it
// acknowledges writes (WAIT), which also says it is in sync: after a full
// sync the primary streams only after the replica's first REPLCONF ACK,
// sent once a second.
func startAckingReplica(t testing.TB, primary *redistest.Server) *redistest.Server {
	t.Helper()
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", "127.0.0.1", fmt.Sprint(primary.Port())))
	ctx := testkit.Context(t, 30*time.Second)
	testkit.WaitFor(t, 20*time.Second, "an acknowledged write", func() bool {
		primary.Client.Set(ctx, "sync", "1", 0)
		n, _ := primary.Client.Wait(ctx, 1, time.Second).Result()
		return n == 1
	})
	return replica
}
