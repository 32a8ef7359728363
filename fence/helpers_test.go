package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// newStore starts a redis-server and returns a store on a client of its own.
func newStore(t testing.TB, opts ...fence.Option) (*fence.Redis, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	return storeOn(t, srv.NewClient(), opts...), srv
}

func storeOn(t testing.TB, rdb redis.UniversalClient, opts ...fence.Option) *fence.Redis {
	t.Helper()
	s, err := fence.NewRedis(rdb, opts...)
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	return s
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// raw reads a record's fields straight from Redis, as an independent
// witness of what the scripts stored.
func raw(t testing.TB, rdb redis.Cmdable, key string) map[string]string {
	t.Helper()
	m, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

func mustSet(t testing.TB, s *fence.Redis, key, value string, token int64, opts ...fence.SetOption) {
	t.Helper()
	if err := s.Set(ctxT(t), key, value, token, opts...); err != nil {
		t.Fatalf("Set(%q, %q, %d): %v", key, value, token, err)
	}
}

// wantStale checks err is ErrStale as a *StaleError with these fields.
func wantStale(t testing.TB, err error, key string, token, current int64) {
	t.Helper()
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	var se *fence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err %T is not a *StaleError", err)
	}
	if se.Key != key || se.Token != token || se.Current != current {
		t.Fatalf("StaleError = %+v, want key %q token %d current %d", *se, key, token, current)
	}
}

func mustGet(t testing.TB, s *fence.Redis, key string) (fence.Entry, bool) {
	t.Helper()
	e, ok, err := s.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return e, ok
}

// cutOff is holder A, whose connections to Redis (the lock's and the
// store's) go through proxies the test pauses, as a partition or a pause
// would stall them, and holder B, connected directly, on one server.
type cutOff struct {
	pxLock, pxStore *tcpproxy.Proxy
	a, b            *core.Client
	storeA, storeB  *fence.Redis
}

func newCutOff(t *testing.T) *cutOff {
	t.Helper()
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
	c := &cutOff{}
	var rdbLock, rdbStore *redis.Client
	c.pxLock, rdbLock = proxied()
	c.pxStore, rdbStore = proxied()
	c.a = testkit.Client(t, rdbLock, core.WithOwner("A"))
	c.storeA = storeOn(t, rdbStore)
	c.b = testkit.Client(t, srv.NewClient(), core.WithOwner("B"))
	c.storeB = storeOn(t, srv.NewClient())
	return c
}

// holdWrite cuts A off and sends write (A's, through storeA) into the
// stalled connection; it returns once the write is in flight, with where its
// result will come when the connections heal.
func (c *cutOff) holdWrite(t *testing.T, write func(ctx context.Context) error) <-chan error {
	t.Helper()
	c.pxLock.Pause()
	c.pxStore.Pause()
	sent := c.pxStore.Stats().Upstream
	late := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		late <- write(ctx)
	}()
	testkit.WaitFor(t, 5*time.Second, "A's write in flight", func() bool { return c.pxStore.Stats().Upstream > sent })
	return late
}

// handOver waits for A's lease la to end (ErrLost: its renewals stall) and
// B to take the lock once it expired on the server.
func (c *cutOff) handOver(t *testing.T, la *core.Lease) *core.Lease {
	t.Helper()
	testkit.Recv(t, la.Done(), 10*time.Second, "A's lease to end")
	if !errors.Is(context.Cause(la.Context()), core.ErrLost) {
		t.Fatalf("A's lease ended with %v, want ErrLost", context.Cause(la.Context()))
	}
	lb, err := c.b.Acquire(ctxT(t), la.Key(), core.Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lb.Release(context.Background()) })
	return lb
}

// heal lets A's connections (and its held write) through.
func (c *cutOff) heal() {
	c.pxStore.Resume()
	c.pxLock.Resume()
}
