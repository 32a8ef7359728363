package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

func TestLivenessCheck(t *testing.T) {
	l := NewLiveness("a", "b", "c", "d")
	if err := l.Check(time.Second); err == nil {
		t.Fatal("Check before Healed passed")
	}
	l.Acquired("a") // before the heal: fine
	l.Healed()
	l.Acquired("b")
	l.Failed("c", context.DeadlineExceeded)
	err := l.Check(time.Hour)
	if err == nil || !strings.Contains(err.Error(), "c failed") || !strings.Contains(err.Error(), "d never acquired") ||
		strings.Contains(err.Error(), "waiter a") || strings.Contains(err.Error(), "waiter b") {
		t.Fatalf("Check = %v", err)
	}
	late := NewLiveness("x")
	late.Healed()
	late.mu.Lock()
	late.got["x"] = late.healed.Add(2 * time.Second) // as if it acquired 2s after the heal
	late.mu.Unlock()
	if err := late.Check(time.Second); err == nil || !strings.Contains(err.Error(), "after the heal") {
		t.Fatalf("late waiter: %v", err)
	}
	if err := late.Check(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if late.Latest() != 2*time.Second {
		t.Fatalf("Latest = %v", late.Latest())
	}
}

// LeftLocks reports an owned hash and a key without TTL, not a released
// hash (only f and r, with a TTL) nor keys outside the prefix.
func TestLeftLocks(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := srv.Client
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.HSet(ctx, "lockkit:v1:k:held", "o", "tok", "f", 1, "w", "x").Err())
	must(rdb.PExpire(ctx, "lockkit:v1:k:held", time.Minute).Err())
	must(rdb.HSet(ctx, "lockkit:v1:k:released", "f", 2, "r", "tok").Err())
	must(rdb.PExpire(ctx, "lockkit:v1:k:released", 10*time.Second).Err())
	must(rdb.HSet(ctx, "lockkit:v1:k:forever", "f", 3).Err())
	must(rdb.Set(ctx, "other:key", "x", 0).Err())
	lo, err := LeftLocks(ctx, rdb, "lockkit:")
	if err != nil {
		t.Fatal(err)
	}
	want := "lockkit:v1:k:forever: no ttl, lockkit:v1:k:held: owned"
	if got := FormatLeftovers(lo); got != want {
		t.Fatalf("LeftLocks = %q, want %q", got, want)
	}
	must(rdb.Del(ctx, "lockkit:v1:k:held", "lockkit:v1:k:forever").Err())
	if lo, err := LeftLocks(ctx, rdb, "lockkit:"); err != nil || len(lo) != 0 {
		t.Fatalf("clean database: %v %v", lo, err)
	}
}
