package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
)

func mustClaim(t testing.TB, s *fence.Redis, key string, token int64) (fence.Entry, bool) {
	t.Helper()
	e, ok, err := s.Claim(ctxT(t), key, token)
	if err != nil {
		t.Fatalf("Claim(%q, %d): %v", key, token, err)
	}
	return e, ok
}

// A claim reads like Get and stores its token like a write: an older token
// is refused afterwards (write or claim), the claimer's own token is not.
func TestClaimFencesOlderTokens(t *testing.T) {
	s, srv := newStore(t)
	ctx := ctxT(t)
	mustSet(t, s, "r", "a", 100)
	if e, ok := mustClaim(t, s, "r", 200); !ok || e.Value != "a" || e.Token != 100 {
		t.Fatalf("Claim = %+v, %v; want a/100 (what Get returned before)", e, ok)
	}
	if m := raw(t, srv.Client, "r"); m["v"] != "a" || m["f"] != "200" {
		t.Fatalf("stored %v; want v=a f=200", m)
	}
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "a" || e.Token != 200 {
		t.Fatalf("Get after Claim = %+v, %v; want a/200", e, ok)
	}
	wantStale(t, s.Set(ctx, "r", "late", 150), "r", 150, 200)
	wantStale(t, s.Delete(ctx, "r", 150), "r", 150, 200)
	_, _, err := s.Claim(ctx, "r", 150)
	wantStale(t, err, "r", 150, 200)
	if e, ok := mustClaim(t, s, "r", 200); !ok || e.Value != "a" || e.Token != 200 { // re-sent, or read again
		t.Fatalf("second Claim = %+v, %v", e, ok)
	}
	mustSet(t, s, "r", "b", 200)
	if e, ok := mustGet(t, s, "r"); !ok || e.Value != "b" || e.Token != 200 {
		t.Fatalf("Get = %+v, %v; want b/200", e, ok)
	}
	if pttl := srv.Client.PTTL(ctx, "r").Val(); pttl != -1 {
		t.Fatalf("PTTL = %v; a claim must not give a value without TTL an expiry", pttl)
	}
}

// A claim of a key without a record leaves the token, kept for keep as a
// tombstone is: an older writer is refused, and the claimer's write without
// TTL makes the record permanent.
func TestClaimWithoutRecord(t *testing.T) {
	s, srv := newStore(t, fence.WithKeep(time.Minute))
	ctx := ctxT(t)
	if e, ok := mustClaim(t, s, "r", 100); ok || e != (fence.Entry{}) {
		t.Fatalf("Claim of a missing key = %+v, %v", e, ok)
	}
	if m := raw(t, srv.Client, "r"); m["v"] != "" || m["f"] != "100" || m["e"] == "" {
		t.Fatalf("stored %v; want f=100 and e, no v", m)
	}
	if pttl := srv.Client.PTTL(ctx, "r").Val(); pttl <= 0 || pttl > time.Minute {
		t.Fatalf("PTTL = %v; want keep (1m)", pttl)
	}
	if e, ok := mustGet(t, s, "r"); ok || e.Token != 100 {
		t.Fatalf("Get = %+v, %v; want no value, token 100", e, ok)
	}
	wantStale(t, s.Set(ctx, "r", "late", 99), "r", 99, 100)
	mustSet(t, s, "r", "1", 100)
	if pttl := srv.Client.PTTL(ctx, "r").Val(); pttl != -1 {
		t.Fatalf("PTTL after the claimer's write = %v, want none", pttl)
	}
	if m := raw(t, srv.Client, "r"); m["e"] != "" {
		t.Fatalf("stored %v: no expiry field expected", m)
	}
}

// The claimed token is kept for the claiming store's keep from the claim on
// when the record has no value (a tombstone, an expired value), and a
// value's own expiry is left alone.
func TestClaimKeepsTheToken(t *testing.T) {
	srv := redistest.Start(t)
	short := storeOn(t, srv.NewClient(), fence.WithKeep(10*time.Second))
	long := storeOn(t, srv.NewClient(), fence.WithKeep(time.Hour))
	ctx := ctxT(t)
	pttl := func(key string) time.Duration { return srv.Client.PTTL(ctx, key).Val() }

	if err := short.Delete(ctx, "tomb", 100); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, long, "tomb", 200)
	if d := pttl("tomb"); d <= 10*time.Second {
		t.Fatalf("tombstone PTTL after the claim = %v; want the claiming store's keep (1h)", d)
	}

	mustSet(t, short, "gone", "a", 100, fence.TTL(time.Millisecond))
	deadline := time.Now().Add(5 * time.Second)
	for { // waiting on the server's clock: nothing to signal
		if _, ok := mustGet(t, short, "gone"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the value did not expire")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e, ok := mustClaim(t, long, "gone", 200); ok || e.Token != 100 {
		t.Fatalf("Claim of an expired value = %+v, %v; want no value, token 100", e, ok)
	}
	if d := pttl("gone"); d <= 10*time.Second {
		t.Fatalf("expired value's PTTL after the claim = %v; want the claiming store's keep (1h)", d)
	}

	mustSet(t, long, "live", "a", 100, fence.TTL(time.Hour))
	before := raw(t, srv.Client, "live")["e"]
	if e, ok := mustClaim(t, short, "live", 200); !ok || e.Value != "a" {
		t.Fatalf("Claim of a value with TTL = %+v, %v", e, ok)
	}
	if d := pttl("live"); d <= time.Hour {
		t.Fatalf("PTTL = %v; the claim must not shorten a value's TTL + keep (2h)", d)
	}
	if m := raw(t, srv.Client, "live"); m["e"] != before || m["v"] != "a" || m["f"] != "200" {
		t.Fatalf("stored %v; want the value and its expiry %s unchanged, f=200", m, before)
	}
}

// TestClaimRefusedChangesNothing: a claim with an older token is refused
// with the stored token, and the record is as it was.
func TestClaimRefusedChangesNothing(t *testing.T) {
	s, srv := newStore(t)
	mustSet(t, s, "r", "a", 200, fence.TTL(time.Hour))
	before := raw(t, srv.Client, "r")
	pttl := srv.Client.PTTL(context.Background(), "r").Val()
	e, ok, err := s.Claim(ctxT(t), "r", 100)
	wantStale(t, err, "r", 100, 200)
	if ok || e != (fence.Entry{}) {
		t.Fatalf("a refused claim read %+v, %v", e, ok)
	}
	after := raw(t, srv.Client, "r")
	if len(after) != len(before) || after["v"] != before["v"] || after["f"] != before["f"] || after["e"] != before["e"] {
		t.Fatalf("record %v after a refused claim, was %v", after, before)
	}
	if d := srv.Client.PTTL(context.Background(), "r").Val(); d > pttl {
		t.Fatalf("PTTL %v after a refused claim, was %v", d, pttl)
	}
}
