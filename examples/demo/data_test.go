package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/internal/redistest"
)

// keysOf returns every key of the server with its TTL (-1: none).
func keysOf(ctx context.Context, rdb *redis.Client) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		ttl, err := rdb.PTTL(ctx, iter.Val()).Result()
		if err != nil {
			return nil, err
		}
		if ttl != -2 { // -2: gone since the scan saw it
			out[iter.Val()] = ttl
		}
	}
	return out, iter.Err()
}

// noExpiry lists the keys without a TTL.
func noExpiry(keys map[string]time.Duration) []string {
	var out []string
	for k, ttl := range keys {
		if ttl < 0 {
			out = append(out, fmt.Sprintf("%s (PTTL %d)", k, ttl))
		}
	}
	return out
}

// The demo on a user's Redis (REDIS_URL, a real redis-server here) leaves
// no key there without an expiry, and none of its data: while it runs its
// order records are under the documented prefix, each with an expiry;
// after it exits they are gone, and what is left (the locks' hashes, for
// a few seconds after their release) expires by itself.
func TestDemoDataOnUsersRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := func(k string) string { return map[string]string{embedded.EnvURL: "redis://" + srv.Addr() + "/0"}[k] }
	cfg, err := parse([]string{"-duration", "1s", "-concurrency", "8", "-orders", "20", "-hot", "1", "-lockview", ""}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var during map[string]time.Duration
	var duringErr error
	cfg.hooks.loaded = func() { during, duringErr = keysOf(ctx, srv.Client) }
	var out, errOut bytes.Buffer
	res, err := scenario(ctx, cfg, &out, &errOut)
	if err != nil {
		t.Fatalf("scenario: %v\n%s%s", err, out.String(), errOut.String())
	}
	if duringErr != nil {
		t.Fatal(duringErr)
	}

	records := 0
	for k := range during {
		if strings.HasPrefix(k, dataPrefix) {
			records++
		}
	}
	if records == 0 || records < res.verdict.fenced {
		t.Fatalf("%d records under %q while the demo ran, for %d orders written: %v", records, dataPrefix, res.verdict.fenced, during)
	}
	if bad := noExpiry(during); len(bad) > 0 {
		t.Errorf("while the demo ran, keys without an expiry: %v", bad)
	}

	after, err := keysOf(ctx, srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	if bad := noExpiry(after); len(bad) > 0 {
		t.Errorf("after the demo, keys without an expiry: %v", bad)
	}
	for k := range after {
		if strings.HasPrefix(k, dataPrefix) {
			t.Errorf("after the demo, its record %s is still there", k)
		}
	}
	t.Logf("%d records while it ran, %d keys (all expiring) after", records, len(after))
}
