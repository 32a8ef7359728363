package core

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

// A grantee whose release message is lost (here: its subscription's
// wake-ups go nowhere, as if the message never came) still finds its grant
// by its own periodic attempt, before the grant ends: it gets the very
// token the release granted, after exactly one more attempt.
func TestGranteeMissedNotification(t *testing.T) {
	srv := redistest.Start(t)
	holder, err := New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	rec := &attemptsObserver{contended: make(chan int, 16), ends: make(chan AcquireResult, 1)}
	waiter, err := New(srv.NewClient(), WithObserver(rec), WithTTL(time.Second), WithOwner("waiter")) // grant TTL 1s, attempts every 0.5s
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	l, err := holder.Acquire(ctx, "missed")
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	var got *Lease
	go func() {
		var err error
		got, err = waiter.Acquire(ctx, "missed")
		res <- err
	}()
	for n := 0; n < 2; { // refused, then refused after the subscription was confirmed
		select {
		case n = <-rec.contended:
		case <-ctx.Done():
			t.Fatal("the waiter did not queue")
		}
	}
	// Lose every message from now on.
	h := waiter.b.(*primary).hub
	h.mu.Lock()
	h.subs[waiter.names("missed").channel].rcv[0].wake = make(chan struct{}, 1)
	h.mu.Unlock()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g, held, err := holder.Inspect(ctx, "missed")
	if err != nil || !held || g.Owner != "waiter" || g.Token <= l.Token() {
		t.Fatalf("after the release: %+v held %v (%v), want granted to the waiter, named", g, held, err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	defer got.Release(ctx)
	end := <-rec.ends
	if end.Attempts != 3 || got.Token() != g.Token {
		t.Fatalf("acquired after %d attempts with token %d, want 3 attempts and the grant's token %d", end.Attempts, got.Token(), g.Token)
	}
}

type attemptsObserver struct {
	NopObserver
	contended chan int
	ends      chan AcquireResult
}

func (o *attemptsObserver) Contended(_ context.Context, _ AcquireInfo, _ Holder, attempt int) {
	o.contended <- attempt
}

func (o *attemptsObserver) AcquireEnd(ctx context.Context, _ AcquireInfo, r AcquireResult) context.Context {
	o.ends <- r
	return ctx
}

// Every script stays idempotent per token with the wait queue: go-redis may
// re-send one whose reply was lost (MaxRetries). Each step is run twice and
// must answer the same and leave the same hash.
func TestWaitQueueScriptsIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	p := newPrimary(srv.NewClient(), replicaAck{}, DefaultReleaseTimeout)
	defer p.close()
	ctx := context.Background()
	n := namesOf("lockkit:v1:k:idem", "lockkit:v1:c:k:idem")
	hash := func() map[string]string {
		m, err := srv.Client.HGetAll(ctx, n.key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	twice := func(what string, f func() any) any {
		t.Helper()
		a := f()
		h1 := hash()
		b := f()
		h2 := hash()
		if len(h1) != len(h2) {
			t.Fatalf("%s re-sent changed the hash: %v then %v", what, h1, h2)
		}
		for k, v := range h1 {
			if k[0] != 'i' && h2[k] != v { // i<queue>: only its expiry moves
				t.Fatalf("%s re-sent changed %s: %v then %v", what, k, h1, h2)
			}
		}
		if a != b {
			t.Fatalf("%s re-sent answered %v, then %v", what, a, b)
		}
		return a
	}
	req := func(token, queue string) acquireReq {
		return acquireReq{token: token, ttl: 30 * time.Second, owner: "o-" + token, queue: queue}
	}
	acq := func(r acquireReq) func() any {
		return func() any {
			rep, err := p.acquire(ctx, n, r)
			if err != nil {
				t.Fatal(err)
			}
			rep.holder.TTL = 0
			return rep
		}
	}
	rel := func(token string) func() any {
		return func() any {
			ok, err := p.release(ctx, n, token, false)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
	}
	first := twice("acquire of a free lock", acq(req("A", ""))).(acquireReply)
	twice("queueing of B", acq(req("B1", "qB")))
	twice("queueing of C", acq(req("C1", "qC")))
	if h := hash(); h["qh"] != "1" || h["qt"] != "2" || h["q1"] != "qB" || h["q2"] != "qC" {
		t.Fatalf("queue %v, want qB then qC", h)
	}
	twice("release granting B", rel("A"))
	h := hash()
	if h["o"] != "qB" || h["qh"] != "2" || h["q1"] != "" || h["iqB"] != "" {
		t.Fatalf("after the release %v, want granted to qB, qC queued", h)
	}
	confirm := twice("B's confirming attempt", acq(req("B2", "qB"))).(acquireReply)
	if !confirm.ok || confirm.fence <= first.fence {
		t.Fatalf("confirmation %+v after %d", confirm, first.fence)
	}
	if h := hash(); h["o"] != "B2" || h["w"] != "o-B2" {
		t.Fatalf("after the confirmation %v", h)
	}
	noQueue := func(when string) {
		t.Helper()
		for _, f := range []string{"qh", "qt", "q1", "q2", "q3", "iqB", "iqC", "iqD"} {
			if v, ok := hash()[f]; ok {
				t.Fatalf("%s: the hash keeps %s=%q: %v", when, f, v, hash())
			}
		}
	}
	twice("C leaving the queue", rel("qC"))
	noQueue("C, the only entry, left") // else B's release walks an empty queue and publishes
	twice("B's release", rel("B2"))
	// Free (o empty), the last token and the released one kept, and of the
	// holder only what the next one overwrites (w, m); no queue field.
	for k, v := range hash() {
		if (k == "o" && v != "") || (k != "o" && k != "f" && k != "r" && k != "w" && k != "m") {
			t.Fatalf("the released lock keeps %q=%q: %v", k, v, hash())
		}
	}

	// A queued caller that finds the lock free, as after ForceRelease, takes
	// it and leaves the queue, bounds and all when it was the only entry.
	twice("E's acquire", acq(req("E", "")))
	twice("queueing of D", acq(req("D1", "qD")))
	if h := hash(); h["qh"] != "1" || h["qt"] != "1" || h["q1"] != "qD" {
		t.Fatalf("queue %v, want qD alone", h)
	}
	if err := srv.Client.HDel(ctx, n.key, "o", "w", "m").Err(); err != nil { // what force.lua does
		t.Fatal(err)
	}
	if rep := twice("D's acquire of the free lock", acq(req("D2", "qD"))).(acquireReply); !rep.ok {
		t.Fatalf("D's acquire of the free lock: %+v", rep)
	}
	noQueue("D, the only entry, took the lock")

	// Entries leaving from either end move the bounds; the one left is
	// still granted the lock, and a new entry takes the freed place.
	queue := func(when, qh, qt string, entries map[string]string) {
		t.Helper()
		h := hash()
		if h["qh"] != qh || h["qt"] != qt {
			t.Fatalf("%s: bounds %q..%q, want %s..%s: %v", when, h["qh"], h["qt"], qh, qt, h)
		}
		for f, want := range entries {
			if h[f] != want {
				t.Fatalf("%s: %s=%q, want %q: %v", when, f, h[f], want, h)
			}
		}
	}
	forceFree := func() {
		t.Helper()
		if err := srv.Client.HDel(ctx, n.key, "o", "w", "m").Err(); err != nil {
			t.Fatal(err)
		}
	}
	twice("queueing of X", acq(req("X1", "qX")))
	twice("queueing of Y", acq(req("Y1", "qY")))
	twice("Y, the tail, leaving", rel("qY"))
	queue("Y, the tail, left", "1", "1", map[string]string{"q1": "qX", "q2": "", "iqY": ""})
	twice("queueing of Z", acq(req("Z1", "qZ")))
	queue("Z queued", "1", "2", map[string]string{"q2": "qZ"})
	twice("X, the head, leaving", rel("qX"))
	queue("X, the head, left", "2", "2", map[string]string{"q1": "", "iqX": "", "q2": "qZ"})
	twice("D's release", rel("D2"))
	if h := hash(); h["o"] != "qZ" {
		t.Fatalf("D's release granted %q, want qZ, the entry left: %v", h["o"], h)
	}
	twice("Z's confirming attempt", acq(req("Z2", "qZ")))
	noQueue("Z took its grant")

	// The same from a free lock: the tail, then the head, takes it.
	twice("queueing of V", acq(req("V1", "qV")))
	twice("queueing of W", acq(req("W1", "qW")))
	forceFree()
	twice("W, the tail, taking the free lock", acq(req("W2", "qW")))
	queue("W, the tail, took it", "1", "1", map[string]string{"q1": "qV", "q2": "", "iqW": ""})
	twice("queueing of U", acq(req("U1", "qU")))
	forceFree()
	twice("V, the head, taking the free lock", acq(req("V2", "qV")))
	queue("V, the head, took it", "2", "2", map[string]string{"q1": "", "iqV": "", "q2": "qU"})
}

// release.lua's third argument: absent keeps the lease's own expiry, a
// number of ms sets it, and '0', which meant "keep" before the argument
// could be absent, still keeps it (PEXPIRE 0 would delete the hash and the
// last fencing token with it).
func TestReleaseKeepArgument(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(srv.NewClient(), WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name    string
		keep    []any
		atLeast time.Duration // the hash's TTL after the release
		atMost  time.Duration
	}{
		{"absent", nil, 10 * time.Second, 20 * time.Second},
		{"'0'", []any{"0"}, 10 * time.Second, 20 * time.Second},
		{"3000 ms", []any{3000}, time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Acquire(ctx, "keep")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx) // already released: a no-op answer
			args := append([]any{l.token, l.names.channel}, tc.keep...)
			if v, err := releaseScripts.classic.Run(ctx, srv.Client, []string{l.names.key}, args...).Int64(); err != nil || v != 1 {
				t.Fatalf("release = %d, %v", v, err)
			}
			ttl, err := srv.Client.PTTL(ctx, l.names.key).Result()
			if err != nil || ttl < tc.atLeast || ttl > tc.atMost {
				t.Fatalf("hash TTL after the release %v (%v), want %v to %v", ttl, err, tc.atLeast, tc.atMost)
			}
			if f, _ := srv.Client.HGet(ctx, l.names.key, "f").Int64(); f != l.Token() {
				t.Fatalf("last token %d, want %d", f, l.Token())
			}
		})
	}
}
