package bench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
)

// BenchmarkIdempotency is what an idempotency record adds to a request,
// at the core level and side by side with the plain lock, one caller on
// one redis-server:
//
//   - lock: Acquire and Release of a free key, the lock a route without
//     idempotency takes;
//   - first: a request's first sending, Claim of a new record and
//     Complete with its answer (a 256-byte payload; the fingerprint a
//     SHA-256 in base64url, as package guard makes it);
//   - replay: a retry of a completed request, Claim of a completed
//     record, which answers with the stored payload.
//
// Each reports roundtrips/op (go-redis calls and pipelines, counted by a
// hook: one per network round trip), redis-us/op (Redis's own time in its
// scripts, INFO commandstats) and allocs/op. Renewals play no part: the
// TTL is far beyond an operation.
func BenchmarkIdempotency(b *testing.B) {
	srv := redistest.Start(b)
	rtt := &rttCounter{}
	rdb := goRedisClient(srv.Addr(), rtt)
	defer rdb.Close()
	c, err := core.New(rdb, core.WithTTL(ttl))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	sum := sha256.Sum256([]byte("POST /orders/{id}/pay\n\napplication/json\n{\"amount\":4200}"))
	req := core.ClaimRequest{Name: "POST /orders/{id}/pay", Fingerprint: base64.RawURLEncoding.EncodeToString(sum[:]), Retention: time.Minute}
	payload := make([]byte, 256)

	lock := func(key string) {
		l, err := c.Acquire(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	first := func(key string) {
		cl, err := c.Claim(ctx, key, req)
		if err != nil || cl.Lease == nil {
			b.Fatalf("claim of %q: %+v, %v", key, cl, err)
		}
		if err := cl.Lease.Complete(ctx, payload); err != nil {
			b.Fatal(err)
		}
	}
	replay := func(key string) {
		cl, err := c.Claim(ctx, key, req)
		if err != nil || !cl.Replayed() {
			b.Fatalf("retry of %q: %+v, %v", key, cl, err)
		}
	}
	first("bench:idem:done") // the record every replay finds
	runs := 0                // a sub-benchmark runs more than once (b.N 1, then the real one): fresh keys each time

	for _, tc := range []struct {
		name string
		op   func(key string)
		// fresh: each operation on a key of its own (a new record).
		fresh bool
	}{
		{"lock", lock, false},
		{"first", first, true},
		{"replay", replay, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			keys := []string{"bench:idem:done"}
			if tc.name == "lock" {
				keys = []string{"bench:idem:lock"}
			}
			if tc.fresh {
				runs++
				keys = make([]string, b.N+100)
				for i := range keys {
					keys[i] = "bench:idem:" + strconv.Itoa(runs) + ":" + strconv.Itoa(i)
				}
			}
			key := func(i int) string {
				if tc.fresh {
					return keys[i]
				}
				return keys[0]
			}
			for i := range 100 { // scripts loaded, connections dialled
				tc.op(key(b.N + i))
			}
			before, err := redistest.CommandStats(ctx, srv.Client)
			if err != nil {
				b.Fatal(err)
			}
			trips := rtt.n.Load()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tc.op(key(i))
			}
			b.StopTimer()
			trips = rtt.n.Load() - trips
			after, err := redistest.CommandStats(ctx, srv.Client)
			if err != nil {
				b.Fatal(err)
			}
			us := 0.0
			for _, name := range []string{"evalsha", "eval"} {
				us += after[name].Usec - before[name].Usec
			}
			b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
			b.ReportMetric(us/float64(b.N), "redis-us/op")
		})
	}
}
