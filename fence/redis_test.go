package fence_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/fence"
)

func TestStaleTokenRefused(t *testing.T) {
	s, srv := newStore(t)
	mustSet(t, s, "r", "new", 200)
	err := s.Set(ctxT(t), "r", "old", 100)
	wantStale(t, err, "r", 100, 200)
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "new" || e.Token != 200 {
		t.Fatalf("Get = %+v, %v; want new/200", e, ok)
	}
	if m := raw(t, srv.Client, "r"); m["v"] != "new" || m["f"] != "200" {
		t.Fatalf("stored %v; want v=new f=200", m)
	}
}

func TestNewerTokenAccepted(t *testing.T) {
	s, srv := newStore(t)
	mustSet(t, s, "r", "a", 100)
	mustSet(t, s, "r", "b", 101)
	mustSet(t, s, "r", "c", 5000)
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "c" || e.Token != 5000 {
		t.Fatalf("Get = %+v, %v; want c/5000", e, ok)
	}
	if m := raw(t, srv.Client, "r"); m["v"] != "c" || m["f"] != "5000" {
		t.Fatalf("stored %v; want v=c f=5000", m)
	}
	if ttl := srv.Client.PTTL(context.Background(), "r").Val(); ttl != -1 {
		t.Fatalf("PTTL = %v; a value without TTL must not expire", ttl)
	}
}

// An equal token is the same lease: a re-sent write succeeds, and so does
// a second write of the holder.
func TestSameTokenAccepted(t *testing.T) {
	s, _ := newStore(t)
	mustSet(t, s, "r", "a", 100)
	mustSet(t, s, "r", "a", 100) // re-sent
	if e, _ := mustGet(t, s, "r"); e.Value != "a" || e.Token != 100 {
		t.Fatalf("Get = %+v; want a/100", e)
	}
	mustSet(t, s, "r", "b", 100) // the holder's second update
	if e, _ := mustGet(t, s, "r"); e.Value != "b" || e.Token != 100 {
		t.Fatalf("Get = %+v; want b/100", e)
	}
	wantStale(t, s.Set(ctxT(t), "r", "c", 99), "r", 99, 100)
}

// Tokens are compared exactly over the int64 range: above 2^53 a Lua
// number would make neighbours equal, so an older token would pass.
func TestTokensExactBeyondFloat(t *testing.T) {
	s, _ := newStore(t)
	big := int64(1)<<60 + 1
	mustSet(t, s, "r", "a", big)
	wantStale(t, s.Set(ctxT(t), "r", "b", big-1), "r", big-1, big)
	mustSet(t, s, "r", "c", math.MaxInt64)
	wantStale(t, s.Set(ctxT(t), "r", "d", math.MaxInt64-1), "r", math.MaxInt64-1, math.MaxInt64)
	if e, _ := mustGet(t, s, "r"); e.Value != "c" || e.Token != math.MaxInt64 {
		t.Fatalf("Get = %+v; want c/MaxInt64", e)
	}
	// Different lengths: 10 > 9, though "10" < "9" as strings.
	mustSet(t, s, "q", "a", 9)
	mustSet(t, s, "q", "b", 10)
	wantStale(t, s.Set(ctxT(t), "q", "c", 9), "q", 9, 10)
}

func TestGetMissing(t *testing.T) {
	s, _ := newStore(t)
	if e, ok := mustGet(t, s, "none"); ok || e != (fence.Entry{}) {
		t.Fatalf("Get of a missing key = %+v, %v", e, ok)
	}
}

// A value's TTL ends the value, not the fence: the token is kept for keep
// after it, and a late write with an older token is still refused.
func TestTTLKeepsTheToken(t *testing.T) {
	const keep = time.Hour
	s, srv := newStore(t, fence.WithKeep(keep))
	mustSet(t, s, "r", "a", 100, fence.TTL(200*time.Millisecond))
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "a" {
		t.Fatalf("Get before expiry = %+v, %v", e, ok)
	}
	pttl := srv.Client.PTTL(context.Background(), "r").Val()
	if pttl <= keep || pttl > keep+200*time.Millisecond {
		t.Fatalf("PTTL = %v; want TTL + keep", pttl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		e, ok := mustGet(t, s, "r")
		if !ok {
			if e.Token != 100 {
				t.Fatalf("expired value's token = %d, want 100 kept", e.Token)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the value did not expire")
		}
		time.Sleep(20 * time.Millisecond) // waiting on the server's clock: nothing to signal
	}
	wantStale(t, s.Set(ctxT(t), "r", "late", 99), "r", 99, 100)
	// A newer write without TTL makes the record permanent again.
	mustSet(t, s, "r", "b", 101)
	if pttl := srv.Client.PTTL(context.Background(), "r").Val(); pttl != -1 {
		t.Fatalf("PTTL after a write without TTL = %v, want none", pttl)
	}
	if m := raw(t, srv.Client, "r"); m["e"] != "" {
		t.Fatalf("stored %v: no expiry field expected", m)
	}
}

// Deleting keeps a tombstone: a late write is refused, the deleting holder
// may write again, and the tombstone expires after keep.
func TestDelete(t *testing.T) {
	s, srv := newStore(t, fence.WithKeep(time.Minute))
	ctx := ctxT(t)
	mustSet(t, s, "r", "a", 100)
	wantStale(t, s.Delete(ctx, "r", 50), "r", 50, 100)
	if err := s.Delete(ctx, "r", 150); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "r", 150); err != nil { // re-sent
		t.Fatalf("re-sent Delete: %v", err)
	}
	if e, ok := mustGet(t, s, "r"); ok || e.Token != 150 {
		t.Fatalf("Get after Delete = %+v, %v; want no value, token 150", e, ok)
	}
	pttl := srv.Client.PTTL(ctx, "r").Val()
	if pttl <= 0 || pttl > time.Minute {
		t.Fatalf("tombstone PTTL = %v, want keep (1m)", pttl)
	}
	wantStale(t, s.Set(ctx, "r", "late", 120), "r", 120, 150)
	mustSet(t, s, "r", "again", 150)
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "again" {
		t.Fatalf("Get = %+v, %v", e, ok)
	}

	// Deleting what was never written leaves a tombstone too.
	if err := s.Delete(ctx, "never", 7); err != nil {
		t.Fatal(err)
	}
	wantStale(t, s.Set(ctx, "never", "late", 6), "never", 6, 7)
}

// The tombstone and the token are forgotten after keep: memory is bounded.
func TestKeepExpires(t *testing.T) {
	s, srv := newStore(t, fence.WithKeep(50*time.Millisecond))
	mustSet(t, s, "r", "a", 100, fence.TTL(50*time.Millisecond))
	if err := s.Delete(ctxT(t), "d", 100); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Client.Exists(context.Background(), "r", "d").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("records outlived TTL + keep")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// After SCRIPT FLUSH (or a restart, or a failover) EVALSHA answers NOSCRIPT
// and the store sends the script itself.
func TestScriptFlushed(t *testing.T) {
	s, srv := newStore(t)
	for i := range 3 {
		if err := srv.Client.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		mustSet(t, s, "r", strconv.Itoa(i), int64(10+i))
		if _, _, err := s.Get(ctxT(t), "r"); err != nil {
			t.Fatal(err)
		}
		if err := srv.Client.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Claim(ctxT(t), "r", int64(10+i)); err != nil {
			t.Fatal(err)
		}
		if err := srv.Client.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctxT(t), "x", int64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWrongType(t *testing.T) {
	s, srv := newStore(t)
	srv.Client.Set(context.Background(), "plain", "x", 0)
	err := s.Set(ctxT(t), "plain", "v", 1)
	if !errors.Is(err, fence.ErrNotRecord) {
		t.Fatalf("Set on a string key: %v, want ErrNotRecord", err)
	}
	if _, _, err := s.Get(ctxT(t), "plain"); !errors.Is(err, fence.ErrNotRecord) {
		t.Fatalf("Get on a string key: %v, want ErrNotRecord", err)
	}
	if _, _, err := s.Claim(ctxT(t), "plain", 1); !errors.Is(err, fence.ErrNotRecord) {
		t.Fatalf("Claim on a string key: %v, want ErrNotRecord", err)
	}
}

// The longest durations a caller can pass still make a valid expiry.
func TestLongestDurations(t *testing.T) {
	s, srv := newStore(t, fence.WithKeep(time.Duration(math.MaxInt64)))
	mustSet(t, s, "r", "a", 1, fence.TTL(time.Duration(math.MaxInt64)))
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "a" {
		t.Fatalf("Get = %+v, %v", e, ok)
	}
	const year = int64(365 * 24 * time.Hour / time.Millisecond)
	if ms, err := srv.Client.Do(context.Background(), "PTTL", "r").Int64(); err != nil || ms < 500*year {
		t.Fatalf("PTTL = %d ms, %v; want TTL + keep (over 500 years)", ms, err)
	}
	if err := s.Delete(ctxT(t), "r", 2); err != nil {
		t.Fatal(err)
	}
}
