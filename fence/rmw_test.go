package fence_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// The read-modify-write interleaving that a fenced write alone does not
// stop, forced by stalled connections rather than timing: holder A reads,
// its lease ends (its connections stall: A is cut off), B takes the lock
// and reads, A's write (held in the network) lands, B writes.
//
// Read with Claim, A's late write is refused: B's claim stored B's token
// before it arrived. Read with Get (the unsafe pattern the package
// documentation warns about), no newer token is stored when A's write
// arrives, so it is accepted, and B's write, computed from the same read,
// overwrites it: two accepted increments, one in the value.
func TestReadModifyWriteInterleaved(t *testing.T) {
	t.Run("Claim", func(t *testing.T) {
		accepted, value := interleaveRMW(t, (*fence.Redis).Claim)
		if accepted != 1 || value != 1 {
			t.Fatalf("%d increments accepted, value %d: want A's refused and B's alone counted", accepted, value)
		}
	})
	t.Run("GetThenSet loses an update", func(t *testing.T) {
		get := func(s *fence.Redis, ctx context.Context, key string, _ int64) (fence.Entry, bool, error) {
			return s.Get(ctx, key)
		}
		accepted, value := interleaveRMW(t, get)
		if accepted != 2 || value != 1 {
			t.Fatalf("%d increments accepted, value %d: want both accepted and one lost (the unsafe pattern)", accepted, value)
		}
	})
}

type readFunc func(s *fence.Redis, ctx context.Context, key string, token int64) (fence.Entry, bool, error)

// interleaveRMW runs the interleaving with read as the read of both
// read-modify-writes (increments of a counter at 0) and returns how many of
// the two writes were accepted and the counter's final value.
func interleaveRMW(t *testing.T, read readFunc) (accepted, value int64) {
	t.Helper()
	const key = "counter"
	srv := redistest.Start(t)
	proxied := func() (*tcpproxy.Proxy, *redis.Client) {
		px, err := tcpproxy.New(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = px.Close() })
		return px, srv.NewClient(func(o *redis.Options) {
			o.Addr = px.Addr()
			o.ReadTimeout, o.WriteTimeout = 20*time.Second, 20*time.Second
		})
	}
	pxLock, rdbLock := proxied()
	pxStore, rdbStore := proxied()
	a := testkit.Client(t, rdbLock, core.WithOwner("A"))
	storeA := storeOn(t, rdbStore)
	b := testkit.Client(t, srv.NewClient(), core.WithOwner("B"))
	storeB := storeOn(t, srv.NewClient())
	ctx := ctxT(t)
	mustSet(t, storeB, key, "0", 1)
	incr := func(s *fence.Redis, token int64) (int64, error) { // read; the write comes later
		e, _, err := read(s, ctx, key, token)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(e.Value, 10, 64)
		return n + 1, err
	}

	la, err := a.Acquire(ctx, "counter", core.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	nextA, err := incr(storeA, la.Token()) // 1. A reads
	if err != nil {
		t.Fatalf("A's read: %v", err)
	}
	pxLock.Pause() // A is cut off: its renewals and its write stall
	pxStore.Pause()
	sent := pxStore.Stats().Upstream
	late := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		late <- storeA.Set(ctx, key, strconv.FormatInt(nextA, 10), la.Token())
	}()
	testkit.WaitFor(t, 5*time.Second, "A's write in flight", func() bool { return pxStore.Stats().Upstream > sent })

	testkit.Recv(t, la.Done(), 10*time.Second, "A's lease to end") // 2. A's lease ends
	if !errors.Is(context.Cause(la.Context()), core.ErrLost) {
		t.Fatalf("A's lease ended with %v, want ErrLost", context.Cause(la.Context()))
	}
	lb, err := b.Acquire(ctx, "counter", core.Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lb.Release(context.Background()) }()
	nextB, err := incr(storeB, lb.Token()) // 3. B reads
	if err != nil {
		t.Fatalf("B's read: %v", err)
	}

	pxStore.Resume() // 4. A's write lands
	pxLock.Resume()
	aErr := testkit.Recv(t, late, 30*time.Second, "A's write to land")
	switch {
	case aErr == nil:
		accepted++
	case errors.Is(aErr, fence.ErrStale):
		wantStale(t, aErr, key, la.Token(), lb.Token())
	default:
		t.Fatalf("A's write: %v", aErr)
	}
	mustSet(t, storeB, key, strconv.FormatInt(nextB, 10), lb.Token()) // 5. B writes
	accepted++

	e, _ := mustGet(t, storeB, key)
	if value, err = strconv.ParseInt(e.Value, 10, 64); err != nil {
		t.Fatal(err)
	}
	t.Logf("A (token %d) read %d, B (token %d) read %d; A's write: %v; final %d", la.Token(), nextA-1, lb.Token(), nextB-1, aErr, value)
	return accepted, value
}
