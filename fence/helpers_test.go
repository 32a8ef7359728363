package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
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
