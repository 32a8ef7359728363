package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// recordKey is the Redis hash of key's idempotency record under the
// default prefix (layout v1, keys.go).
func recordKey(key string) string { return core.DefaultPrefix + ":" + core.LayoutVersion + ":i:" + key }

// mustClaim claims key and fails the test unless the caller got the claim.
func mustClaim(t *testing.T, ctx context.Context, c *core.Client, key string, r core.ClaimRequest) core.Claim {
	t.Helper()
	cl, err := c.Claim(ctx, key, r)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if cl.Outcome != core.OutcomeAcquired || cl.Lease == nil {
		t.Fatalf("Claim(%q) = %+v, want the claim", key, cl)
	}
	return cl
}

// The four answers of a record: claimed, in progress (a live claim
// elsewhere, with the time left of it), replayed (completed, the stored
// bytes), mismatch (another fingerprint, against a completed record too).
func TestClaimAnswers(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newClient(t, srv, core.WithOwner("a")), newClient(t, srv, core.WithOwner("b"))
	ctx := testkit.Context(t, 10*time.Second)
	req := core.ClaimRequest{Fingerprint: "fp1", TTL: 5 * time.Second}

	cl := mustClaim(t, ctx, a, "pay:1", req)
	if cl.Token <= 0 || cl.Token != cl.Lease.Token() || cl.TakenOver {
		t.Fatalf("claim %+v: want a positive token, the lease's, not taken over", cl)
	}

	_, err := b.Claim(ctx, "pay:1", req)
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || core.Classify(ctx, err) != core.OutcomeContended {
		t.Fatalf("claim of a record in progress: %v, want ErrNotAcquired (contended)", err)
	}
	if na.Holder.Owner != "a" || na.Holder.TTL <= 0 || na.Holder.TTL > 5*time.Second || na.Holder.Token != cl.Token {
		t.Errorf("in progress: holder %+v, want owner a, the claim's token and what is left of its 5s", na.Holder)
	}

	answer := []byte("201 {\"id\":7}\x00binary")
	if err := cl.Lease.Complete(ctx, answer); err != nil {
		t.Fatal(err)
	}
	if cl.Lease.Err() == nil {
		t.Error("the claim's lease still held after Complete")
	}
	for _, c := range []*core.Client{a, b} {
		got, err := c.Claim(ctx, "pay:1", req)
		if err != nil || !got.Replayed() || string(got.Payload) != string(answer) || got.Token != cl.Token || got.Lease != nil {
			t.Fatalf("claim of a completed record = %+v, %v; want the answer %q stored by token %d", got, err, answer, cl.Token)
		}
	}
	_, err = b.Claim(ctx, "pay:1", core.ClaimRequest{Fingerprint: "fp2"})
	if !errors.Is(err, core.ErrFingerprint) || core.Classify(ctx, err) != core.OutcomeMismatch {
		t.Fatalf("another fingerprint on a completed record: %v, want ErrFingerprint", err)
	}
	if v, _ := srv.Client.HGet(ctx, recordKey("pay:1"), "d").Result(); v != string(answer) {
		t.Errorf("stored answer %q, want %q", v, answer)
	}
	if ttl := srv.Client.PTTL(ctx, recordKey("pay:1")).Val(); ttl <= 23*time.Hour {
		t.Errorf("completed record expires in %v, want the default retention (24h)", ttl)
	}
}

// The fingerprint is decided before in-progress: a changed request under
// a key whose claim is live is a mismatch (422), not a conflict (409).
func TestClaimMismatchBeforeInProgress(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	cl := mustClaim(t, ctx, c, "k", core.ClaimRequest{Fingerprint: "a"})
	defer cl.Lease.Release(ctx)
	_, err := c.Claim(ctx, "k", core.ClaimRequest{Fingerprint: "b"})
	if !errors.Is(err, core.ErrFingerprint) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another fingerprint on a live claim: %v, want ErrFingerprint", err)
	}
	if _, err := c.Claim(ctx, "k", core.ClaimRequest{Fingerprint: "a"}); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("same fingerprint on a live claim: %v, want ErrNotAcquired", err)
	}
}

// Release without Complete abandons the claim: the next claim runs at
// once, not after the TTL, with a larger token, not a takeover; the
// fingerprint is forgotten with it.
func TestClaimAbandon(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	r := core.ClaimRequest{Fingerprint: "a", TTL: 30 * time.Second}
	first := mustClaim(t, ctx, c, "k", r)
	if err := first.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second := mustClaim(t, ctx, c, "k", core.ClaimRequest{Fingerprint: "b"})
	if second.Token <= first.Token || second.TakenOver {
		t.Fatalf("after an abandon: token %d (taken over %v) after %d; want larger, not taken over", second.Token, second.TakenOver, first.Token)
	}
	if err := second.Lease.Complete(ctx, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := first.Lease.Complete(ctx, []byte("old")); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Complete of an abandoned claim: %v, want ErrNotHeld", err)
	}
	if ok, err := core.CompleteAgain(ctx, first.Lease, []byte("old")); ok || err != nil {
		t.Fatalf("the abandoned claim's completion re-sent: %v, %v; want refused", ok, err)
	}
	if v := srv.Client.HGet(ctx, recordKey("k"), "d").Val(); v != "ok" {
		t.Errorf("stored %q, want the second claim's answer", v)
	}
}

// A completion re-sent (go-redis MaxRetries after a lost reply) succeeds
// and changes nothing; a second Complete of the lease is ErrNotHeld.
func TestClaimCompleteResent(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	cl := mustClaim(t, ctx, c, "k", core.ClaimRequest{Retention: time.Hour})
	if err := cl.Lease.Complete(ctx, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ok, err := core.CompleteAgain(ctx, cl.Lease, []byte("answer")); !ok || err != nil {
			t.Fatalf("completion re-sent: %v, %v; want accepted", ok, err)
		}
	}
	if err := cl.Lease.Complete(ctx, []byte("answer")); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("second Complete: %v, want ErrNotHeld", err)
	}
	got, err := c.Claim(ctx, "k", core.ClaimRequest{})
	if err != nil || string(got.Payload) != "answer" || got.Token != cl.Token {
		t.Fatalf("replay %+v, %v", got, err)
	}
	if ttl := srv.Client.PTTL(ctx, recordKey("k")).Val(); ttl > time.Hour || ttl < 59*time.Minute {
		t.Errorf("record expires in %v, want the retention, 1h", ttl)
	}
}

// A payload over MaxPayload is refused, nothing is stored, and the claim
// is released so the retry runs at once.
func TestClaimPayloadBound(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	cl := mustClaim(t, ctx, c, "k", core.ClaimRequest{})
	if err := cl.Lease.Complete(ctx, make([]byte, core.MaxPayload+1)); !errors.Is(err, core.ErrTooLarge) {
		t.Fatalf("Complete over MaxPayload: %v, want ErrTooLarge", err)
	}
	if cl.Lease.Err() == nil {
		t.Error("lease still held after a refused Complete")
	}
	next := mustClaim(t, ctx, c, "k", core.ClaimRequest{})
	if next.Token <= cl.Token {
		t.Errorf("token %d after %d", next.Token, cl.Token)
	}
	if err := next.Lease.Complete(ctx, make([]byte, core.MaxPayload)); err != nil {
		t.Fatalf("Complete of MaxPayload bytes: %v", err)
	}
}

// Bad requests are refused before any Redis call; Complete of a lock's
// lease is a misuse.
func TestClaimChecks(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	for _, r := range []core.ClaimRequest{
		{TTL: time.Millisecond}, {Retention: -1}, {Wait: -1}, {MaxHold: -1},
		{Fingerprint: string(make([]byte, core.MaxFingerprintLen+1))},
	} {
		if _, err := c.Claim(ctx, "k", r); !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("Claim(%+v): %v, want ErrInvalidOption", r, err)
		}
	}
	if _, err := c.Claim(ctx, "", core.ClaimRequest{}); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	l, err := c.Acquire(ctx, "lock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if err := l.Complete(ctx, nil); !errors.Is(err, core.ErrInvalidOption) {
		t.Errorf("Complete of a lock's lease: %v, want ErrInvalidOption", err)
	}
}

// Redis down: Claim fails closed with ErrUnavailable, as an acquire does;
// FailOpen tells the Observer (Unlocked), as AcquireRequest does.
func TestClaimUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	rec := &unlockedRecorder{n: make(chan struct{}, 16)}
	c := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 10*time.Second)
	srv.Kill()
	for _, open := range []bool{false, true} {
		r := core.ClaimRequest{FailOpen: open}
		_, err := c.Claim(ctx, "k", r)
		if !errors.Is(err, core.ErrUnavailable) || core.Classify(ctx, err) != core.OutcomeUnavailable {
			t.Fatalf("Claim on a dead Redis: %v, want ErrUnavailable", err)
		}
		if r.FailsOpen(ctx, err) != open {
			t.Errorf("FailsOpen = %v, want %v", !open, open)
		}
	}
	if n := rec.count(); n != 1 {
		t.Errorf("Observer.Unlocked called %d times, want once (the FailOpen claim)", n)
	}
}

type unlockedRecorder struct {
	core.NopObserver
	n chan struct{}
}

func (u *unlockedRecorder) Unlocked(context.Context, core.AcquireInfo, error) { u.n <- struct{}{} }

func (u *unlockedRecorder) count() int { return len(u.n) }

// Complete is sent detached from its context: a request context already
// cancelled (the client went away as the handler returned) does not drop
// the answer.
func TestClaimCompleteCancelledContext(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 10*time.Second)
	cl := mustClaim(t, ctx, c, "k", core.ClaimRequest{})
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := cl.Lease.Complete(gone, []byte("kept")); err != nil {
		t.Fatalf("Complete on a cancelled context: %v", err)
	}
	if got, err := c.Claim(ctx, "k", core.ClaimRequest{}); err != nil || string(got.Payload) != "kept" {
		t.Fatalf("replay %+v, %v; want the answer", got, err)
	}
}

// A claim inside its own claim (a handler claiming the record its
// middleware claimed) is ErrWouldDeadlock, as a lock taken again is: it
// would answer "in progress" from its own claim, or wait on itself.
func TestClaimInsideItsOwnClaim(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 30*time.Second)
	cl := mustClaim(t, ctx, c, "nested", core.ClaimRequest{Fingerprint: "f"})
	defer cl.Lease.Release(ctx)
	inner, stop := cl.Lease.Bind(ctx)
	defer stop()
	if _, err := c.Claim(inner, "nested", core.ClaimRequest{Fingerprint: "f", Wait: 10 * time.Second}); !errors.Is(err, core.ErrWouldDeadlock) {
		t.Fatalf("claim inside its own claim: %v, want ErrWouldDeadlock", err)
	}
	if _, err := c.Claim(inner, "other", core.ClaimRequest{Fingerprint: "f"}); err != nil {
		t.Fatalf("another record inside the claim: %v", err)
	}
}
