package fence_test

import (
	"context"
	"testing"

	"github.com/lockkit/lockkit/internal/redistest"
)

// serverTime reports the server's own time per call of cmd (INFO
// commandstats usec_per_call), which the loopback round trip that dominates
// ns/op hides. Call it with reset before the loop, then after.
func serverTime(b *testing.B, srv *redistest.Server, cmd string, reset bool) {
	ctx := context.Background()
	if reset {
		srv.Client.ConfigResetStat(ctx)
		return
	}
	st, err := redistest.CommandStats(ctx, srv.Client)
	if err != nil {
		b.Fatal(err)
	}
	if c := st[cmd]; c.Calls > 0 {
		b.ReportMetric(c.Usec/float64(c.Calls), "srv-µs/op")
	}
}

// A fenced Set against a plain SET of the same value on the same server,
// one goroutine: what the token check costs per write.
func BenchmarkSet(b *testing.B) {
	s, srv := newStore(b)
	rdb := srv.NewClient()
	ctx := context.Background()
	token := int64(1_790_000_000_000_000) // a lease token's size (µs since the epoch); kept across b.Run's rounds
	b.Run("fenced", func(b *testing.B) {
		b.ReportAllocs()
		serverTime(b, srv, "evalsha", true)
		defer serverTime(b, srv, "evalsha", false)
		for b.Loop() {
			token++
			if err := s.Set(ctx, "bench:fenced", "paid", token); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced-stale", func(b *testing.B) {
		b.ReportAllocs()
		serverTime(b, srv, "evalsha", true)
		defer serverTime(b, srv, "evalsha", false)
		for b.Loop() {
			if err := s.Set(ctx, "bench:fenced", "late", 1); err == nil {
				b.Fatal("stale write accepted")
			}
		}
	})
	b.Run("plain-SET", func(b *testing.B) {
		b.ReportAllocs()
		serverTime(b, srv, "set", true)
		defer serverTime(b, srv, "set", false)
		for b.Loop() {
			if err := rdb.Set(ctx, "bench:plain", "paid", 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced-Get", func(b *testing.B) {
		b.ReportAllocs()
		serverTime(b, srv, "evalsha", true)
		defer serverTime(b, srv, "evalsha", false)
		for b.Loop() {
			if _, _, err := s.Get(ctx, "bench:fenced"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain-GET", func(b *testing.B) {
		b.ReportAllocs()
		serverTime(b, srv, "get", true)
		defer serverTime(b, srv, "get", false)
		for b.Loop() {
			if err := rdb.Get(ctx, "bench:plain").Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
