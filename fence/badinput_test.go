package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestNewRedisRefusesBadClients(t *testing.T) {
	srv := redistest.Start(t)
	noTimeouts := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = noTimeouts.Close() })
	for name, rdb := range map[string]redis.UniversalClient{
		"nil":             nil,
		"typed nil":       (*redis.Client)(nil),
		"typed nil clust": (*redis.ClusterClient)(nil),
		"no ctx timeouts": noTimeouts,
	} {
		if _, err := fence.NewRedis(rdb); !errors.Is(err, core.ErrBadRedisClient) {
			t.Errorf("%s: NewRedis = %v, want ErrBadRedisClient", name, err)
		}
	}
	for _, keep := range []time.Duration{0, -time.Second, time.Microsecond} {
		if _, err := fence.NewRedis(srv.Client, fence.WithKeep(keep)); !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("WithKeep(%v): %v, want ErrInvalidOption", keep, err)
		}
	}
}

// Bad input is refused before any I/O: the store's client points at a
// server that is gone, so a call that reached Redis would fail otherwise.
func TestBadInputRefusedBeforeIO(t *testing.T) {
	srv := redistest.Start(t)
	s := storeOn(t, srv.NewClient())
	srv.Kill()
	ctx := ctxT(t)
	long := strings.Repeat("k", core.MaxKeyLen+1)
	for _, key := range []string{"", long} {
		if err := s.Set(ctx, key, "v", 1); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("Set(key of %d bytes): %v, want ErrInvalidKey", len(key), err)
		}
		if err := s.Delete(ctx, key, 1); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("Delete(key of %d bytes): %v, want ErrInvalidKey", len(key), err)
		}
		if _, _, err := s.Get(ctx, key); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("Get(key of %d bytes): %v, want ErrInvalidKey", len(key), err)
		}
		if _, _, err := s.Claim(ctx, key, 1); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("Claim(key of %d bytes): %v, want ErrInvalidKey", len(key), err)
		}
	}
	for _, token := range []int64{0, -1, -1 << 63} {
		if err := s.Set(ctx, "k", "v", token); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("Set(token %d): %v, want ErrInvalidToken", token, err)
		}
		if err := s.Delete(ctx, "k", token); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("Delete(token %d): %v, want ErrInvalidToken", token, err)
		}
		if _, _, err := s.Claim(ctx, "k", token); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("Claim(token %d): %v, want ErrInvalidToken", token, err)
		}
	}
	for _, ttl := range []time.Duration{-time.Second, time.Microsecond} {
		if err := s.Set(ctx, "k", "v", 1, fence.TTL(ttl)); !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("Set(TTL %v): %v, want ErrInvalidOption", ttl, err)
		}
	}
}

// Redis down: every call fails at once with ErrUnavailable naming the
// operation and key; a caller whose ctx ended gets its ctx error.
func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	s := storeOn(t, srv.NewClient())
	mustSet(t, s, "k", "v", 1)
	srv.Kill()
	start := time.Now()
	calls := map[string]func(ctx context.Context) error{
		"fence set":    func(ctx context.Context) error { return s.Set(ctx, "k", "v", 2) },
		"fence delete": func(ctx context.Context) error { return s.Delete(ctx, "k", 2) },
		"fence get":    func(ctx context.Context) error { _, _, err := s.Get(ctx, "k"); return err },
		"fence claim":  func(ctx context.Context) error { _, _, err := s.Claim(ctx, "k", 2); return err },
	}
	for op, call := range calls {
		err := call(ctxT(t))
		var ue *core.UnavailableError
		if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &ue) || ue.Op != op || ue.Key != "k" {
			t.Errorf("%s with Redis down: %v, want *core.UnavailableError{Op: %q, Key: \"k\"}", op, err, op)
		}
		if errors.Is(err, fence.ErrStale) {
			t.Errorf("%s: a failed call must not look stale", op)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := call(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx: %v, want context.Canceled", op, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the failed calls took %v", d)
	}
}
