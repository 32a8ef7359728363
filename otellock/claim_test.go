package otellock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestClaimTelemetry: a claim of an idempotency record (core.Client.Claim
// on a real redis-server) is a lock.acquire of kind claim whose outcome
// says what the record was: claimed (acquired, and lock.hold follows),
// replayed (its answer found: no error.type, status Unset, the token of
// the claim that stored it, no lock.hold), mismatch (another request
// under the key: the client's mistake, status Unset), in progress
// elsewhere (contended, naming the owner), and taken over from a claim
// whose owner stopped renewing (lockkit.lock.taken_over, counted by
// lockkit.lock.takeovers). The metrics say the same by outcome, with the
// kind and the name, never the key.
func TestClaimTelemetry(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := newClient(t, srv, core.WithObserver(tel.obs), core.WithOwner("replica-a"))
	other := newClient(t, srv, core.WithObserver(tel.obs), core.WithOwner("replica-b"))
	ctx := testkit.Context(t, 20*time.Second)
	req := core.ClaimRequest{Name: "POST /pay", Fingerprint: "f1", TTL: time.Minute}

	acquire := func(what string, f func()) sdktrace.ReadOnlySpan {
		t.Helper()
		tel.sr.Reset()
		f()
		s := tel.one(t, otellock.SpanAcquire)
		wantAttr(t, s, otellock.AttrKind, core.KindClaim)
		wantAttr(t, s, otellock.AttrName, "POST /pay")
		if s.Status().Code != codes.Unset {
			t.Errorf("%s: lock.acquire status %v, want Unset", what, s.Status())
		}
		return s
	}
	noAttr := func(s sdktrace.ReadOnlySpan, k attribute.Key) {
		t.Helper()
		if v, ok := attrOf(s.Attributes(), k); ok {
			t.Errorf("%s has %s = %v, want none", s.Name(), k, v.AsInterface())
		}
	}

	// Claimed, then completed.
	var first core.Claim
	s := acquire("claimed", func() {
		var err error
		if first, err = c.Claim(ctx, "pay:1", req); err != nil || first.Lease == nil {
			t.Fatalf("claim: %+v, %v", first, err)
		}
		if err := first.Lease.Complete(ctx, []byte("paid")); err != nil {
			t.Fatal(err)
		}
	})
	wantAttr(t, s, otellock.AttrOutcome, "acquired")
	wantAttr(t, s, otellock.AttrFencingToken, first.Token)
	noAttr(s, otellock.AttrTakenOver)
	wantAttr(t, tel.one(t, otellock.SpanHold), otellock.AttrKind, core.KindClaim)

	// Replayed.
	s = acquire("replayed", func() {
		if cl, err := other.Claim(ctx, "pay:1", req); err != nil || !cl.Replayed() {
			t.Fatalf("retry: %+v, %v", cl, err)
		}
	})
	wantAttr(t, s, otellock.AttrOutcome, "replayed")
	wantAttr(t, s, otellock.AttrFencingToken, first.Token)
	noAttr(s, otellock.AttrErrorType)
	if n := len(tel.ended(otellock.SpanHold)); n != 0 {
		t.Errorf("a replay ended %d lock.hold spans, want none", n)
	}

	// Mismatch.
	s = acquire("mismatch", func() {
		if _, err := other.Claim(ctx, "pay:1", core.ClaimRequest{Name: "POST /pay", Fingerprint: "f2"}); !errors.Is(err, core.ErrFingerprint) {
			t.Fatalf("another request under the key: %v", err)
		}
	})
	wantAttr(t, s, otellock.AttrOutcome, "mismatch")
	wantAttr(t, s, otellock.AttrErrorType, "mismatch")

	// In progress elsewhere.
	held, err := c.Claim(ctx, "pay:2", req)
	if err != nil {
		t.Fatal(err)
	}
	s = acquire("in progress", func() {
		if _, err := other.Claim(ctx, "pay:2", req); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("claim in progress: %v", err)
		}
	})
	wantAttr(t, s, otellock.AttrOutcome, "contended")
	wantAttr(t, s, otellock.AttrErrorType, "contended")
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != otellock.EventContended {
		t.Errorf("in progress: events %v, want one %s", ev, otellock.EventContended)
	} else if v, _ := attrOf(ev[0].Attributes, otellock.AttrHolderOwner); v.AsString() != "replica-a" {
		t.Errorf("in progress names %q, want replica-a", v.AsString())
	}
	if err := held.Lease.Complete(ctx, []byte("paid")); err != nil {
		t.Fatal(err)
	}

	// Taken over: the owner's connection stalls (its renewals and its
	// abandon never arrive), its claim expires, and the next claim takes
	// the record over.
	px, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	stalled := testkit.Client(t, srv.NewClient(func(o *redis.Options) { o.Addr = px.Addr() }), core.WithObserver(tel.obs), core.WithOwner("replica-c"))
	gone, err := stalled.Claim(ctx, "pay:3", core.ClaimRequest{Name: "POST /pay", Fingerprint: "f1", TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	px.Pause()
	defer px.Resume()
	testkit.Recv(t, gone.Lease.Done(), 10*time.Second, "the stalled claim to end")
	var took core.Claim
	testkit.WaitFor(t, 10*time.Second, "the claim taken over", func() bool {
		tel.sr.Reset()
		took, err = other.Claim(ctx, "pay:3", req)
		return err == nil
	})
	s = tel.one(t, otellock.SpanAcquire)
	if !took.TakenOver {
		t.Fatalf("claim after the expiry: %+v, want it taken over", took)
	}
	wantAttr(t, s, otellock.AttrOutcome, "acquired")
	wantAttr(t, s, otellock.AttrTakenOver, true)
	wantAttr(t, s, otellock.AttrFencingToken, took.Token)
	_ = took.Lease.Release(ctx)

	data := tel.collect(t)
	name, kind := otellock.AttrName.String("POST /pay"), otellock.AttrKind.String(core.KindClaim)
	for _, tc := range []struct {
		outcome, errType string
		want             int64
	}{
		{"acquired", "", 4},
		{"replayed", "", 1},
		{"mismatch", "mismatch", 1},
	} {
		kv := []attribute.KeyValue{name, kind, otellock.AttrOutcome.String(tc.outcome)}
		if tc.errType != "" {
			kv = append(kv, otellock.AttrErrorType.String(tc.errType))
		}
		if got := sumOf(t, data, otellock.MetricAcquisitions, kv...); got != tc.want {
			t.Errorf("%s{outcome=%s} = %d, want %d; series %v", otellock.MetricAcquisitions, tc.outcome, got, tc.want, attrSets(data)[otellock.MetricAcquisitions])
		}
	}
	if got := sumOf(t, data, otellock.MetricAcquisitions, name, kind, otellock.AttrOutcome.String("contended"), otellock.AttrErrorType.String("contended")); got < 2 {
		t.Errorf("%s{outcome=contended} = %d, want at least the claim in progress and the wait for the expiry", otellock.MetricAcquisitions, got)
	}
	if got := sumOf(t, data, otellock.MetricTakeovers, name, kind); got != 1 {
		t.Errorf("%s = %d, want 1; series %v", otellock.MetricTakeovers, got, attrSets(data)[otellock.MetricTakeovers])
	}
}
