package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

func TestBadKeysAndOptions(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		key  string
		opts []core.AcquireOption
		want error
	}{
		{"empty key", "", nil, core.ErrInvalidKey},
		{"1 MB key", strings.Repeat("x", 1<<20), nil, core.ErrInvalidKey},
		{"5ns TTL", "k", []core.AcquireOption{core.TTL(5)}, core.ErrInvalidOption},
		{"negative TTL", "k", []core.AcquireOption{core.TTL(-time.Second)}, core.ErrInvalidOption},
		{"negative wait", "k", []core.AcquireOption{core.Wait(-time.Second)}, core.ErrInvalidOption},
	} {
		if _, err := c.Acquire(ctx, tc.key, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%s: Acquire = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := c.TryAcquire(ctx, tc.key, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%s: TryAcquire = %v, want %v", tc.name, err, tc.want)
		}
	}
	// TTL(0) is the Client's, as an adapter's TTL(0) is.
	if l, err := c.Acquire(ctx, "k0", core.TTL(0)); err != nil || l.TTL() != core.DefaultTTL {
		t.Errorf("TTL(0): %v, %v; want the Client's TTL", l, err)
	} else {
		_ = l.Release(ctx)
	}
	if _, _, err := c.Inspect(ctx, ""); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("Inspect empty = %v", err)
	}
	if _, err := c.ForceRelease(ctx, ""); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("ForceRelease empty = %v", err)
	}
	for _, p := range []string{"", "{app}", "a}"} {
		if _, err := core.New(srv.Client, core.WithPrefix(p)); !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("WithPrefix(%q) = %v", p, err)
		}
	}
	if _, err := core.New(srv.Client, core.WithTTL(0)); !errors.Is(err, core.ErrInvalidOption) {
		t.Errorf("WithTTL(0) = %v", err)
	}
}

// Keys are binary-safe strings: braces, separators, NUL and long keys are
// distinct locks that never collide, and each lock is one Redis key.
func TestHostileKeysAreDistinct(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	long := strings.Repeat("y", core.HashKeyLen+1)
	keys := []string{"a{b}", "a{b}c", "{", "}", "{}", "}{", "a:b", "a\\:b", "a\x00b", "a", "a\x00", "ü:🔒",
		long, long + "z", strings.Repeat("z", core.MaxKeyLen)}
	var leases []*core.Lease
	for _, k := range keys {
		l, err := c.TryAcquire(ctx, k)
		if err != nil {
			t.Fatalf("TryAcquire(%q): %v", k, err)
		}
		leases = append(leases, l)
	}
	n, _ := srv.Client.DBSize(ctx).Result()
	if int(n) != len(keys) {
		t.Fatalf("%d Redis keys for %d locks", n, len(keys))
	}
	for i, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release(%q): %v", keys[i], err)
		}
	}
}

func TestDoubleRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	l, err := c.Acquire(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("second Release = %v", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Extend after Release = %v", err)
	}
}

func TestExtend(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	l, err := c.Acquire(ctx, "ext", core.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if pttl, _ := srv.Client.PTTL(ctx, "lockkit:v1:k:ext").Result(); pttl < 30*time.Second {
		t.Fatalf("PTTL after Extend = %v", pttl)
	}
	if l.TTL() != time.Minute || time.Until(l.Until()) < 30*time.Second {
		t.Fatalf("TTL %v until %v", l.TTL(), time.Until(l.Until()))
	}
	// A shorter TTL pulls the local deadline in too: it never outlives the server's expiry.
	if err := l.Extend(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(l.Until()); left > 2*time.Second {
		t.Fatalf("deadline %v away after Extend(2s)", left)
	}
	_ = l.Release(ctx)
}

func TestNewRejectsUnsafeClients(t *testing.T) {
	if _, err := core.New(nil); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("New(nil) = %v", err)
	}
	var nilClient *redis.Client
	if _, err := core.New(nilClient); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("New(typed nil) = %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	_, err := core.New(rdb)
	if !errors.Is(err, core.ErrBadRedisClient) || !strings.Contains(err.Error(), "ContextTimeoutEnabled: true") {
		t.Fatalf("New without ContextTimeoutEnabled = %v", err)
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cl.Close()
	if _, err := core.New(cl); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("cluster without ContextTimeoutEnabled = %v", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := core.New(ring); !errors.Is(err, core.ErrBadRedisClient) {
		t.Fatalf("ring = %v", err)
	}
}

// Redis killed: every call fails fast with ErrUnavailable (wrapping the
// cause); Release still ends the lease locally.
func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "down:1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := c.Acquire(ctx, "down:2"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire with Redis down = %v", err)
	}
	if _, err := c.Acquire(ctx, "down:2", core.Wait(time.Second)); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire(Wait) with Redis down = %v", err)
	}
	if _, err := c.TryAcquire(ctx, "down:2"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("TryAcquire with Redis down = %v", err)
	}
	if _, _, err := c.Inspect(ctx, "down:2"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Inspect with Redis down = %v", err)
	}
	err = l.Release(ctx)
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Release with Redis down = %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Release with Redis down did not end the lease")
	}
}

// Redis hung (SIGSTOP): a 200 ms deadline bounds Acquire, and the error
// matches DeadlineExceeded; Release without a deadline is bounded too.
func TestRedisHung(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv, core.WithReleaseTimeout(300*time.Millisecond))
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "hung:1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Acquire(dctx, "hung:2")
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Acquire took %v with a 200ms deadline", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a hung Redis = %v", err)
	}
	start = time.Now()
	err = l.Release(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Release took %v with a 300ms release timeout", took)
	}
	if err == nil {
		t.Fatal("Release on a hung Redis reported success")
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Release did not end the lease")
	}
}
