package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Every wait says whom it waited for (Observer.Contended), wherever it
// waited: these tests name each acquire with a label in its context and
// keep what the Observer heard per label.

type labelKey struct{}

func labelled(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

type met struct {
	h       core.Holder
	attempt int
}

// waitRecorder keeps, per labelled acquire, the holders reported
// (Contended) and the result (AcquireEnd).
type waitRecorder struct {
	core.NopObserver
	mu   sync.Mutex
	met  map[string][]met
	ends map[string]core.AcquireResult
	info map[string]core.AcquireInfo
}

func newWaitRecorder() *waitRecorder {
	return &waitRecorder{met: map[string][]met{}, ends: map[string]core.AcquireResult{}, info: map[string]core.AcquireInfo{}}
}

func labelOf(ctx context.Context) string { s, _ := ctx.Value(labelKey{}).(string); return s }

func (r *waitRecorder) Contended(ctx context.Context, _ core.AcquireInfo, h core.Holder, attempt int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.met[labelOf(ctx)] = append(r.met[labelOf(ctx)], met{h, attempt})
}

func (r *waitRecorder) AcquireEnd(ctx context.Context, a core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[labelOf(ctx)], r.info[labelOf(ctx)] = res, a
	return ctx
}

func (r *waitRecorder) events(label string) []met {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.met[label])
}

func (r *waitRecorder) end(label string) (core.AcquireResult, core.AcquireInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ends[label], r.info[label]
}

// metHolder: label's acquire was told of the holder (owner, token).
func (r *waitRecorder) metHolder(label, owner string, token int64) bool {
	return slices.ContainsFunc(r.events(label), func(m met) bool { return m.h.Owner == owner && m.h.Token == token })
}

// attempted: label's own Redis attempts met the lock held n times or more.
func (r *waitRecorder) attempted(label string, n int) bool {
	k := 0
	for _, m := range r.events(label) {
		if m.attempt > 0 {
			k++
		}
	}
	return k >= n
}

// local returns the holders label's acquire met through the local queue
// (attempt 0), checking that none is reported twice and each has Seen.
func local(t *testing.T, r *waitRecorder, label string) []core.Holder {
	t.Helper()
	var hs []core.Holder
	for _, m := range r.events(label) {
		if m.attempt != 0 {
			continue
		}
		if m.h.Seen.IsZero() {
			t.Errorf("%s: holder %s/%d without Seen", label, m.h.Owner, m.h.Token)
		}
		for _, x := range hs {
			if x.Owner == m.h.Owner && x.Token == m.h.Token {
				t.Errorf("%s: holder %s/%d reported twice through the local queue", label, x.Owner, x.Token)
			}
		}
		hs = append(hs, m.h)
	}
	return hs
}

// N callers of one Client queue on a key another Client holds: only the
// head asks Redis, yet every acquire names that holder (owner and fencing
// token) to the Observer; those behind the head learn it through the
// queue (attempt 0), each holder once, and those handed the lock by a
// lease of their Client say so (Handoff, no attempt of their own).
func TestLocalWaitersNameTheHolder(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv, core.WithOwner("holder-H"))
	rec := newWaitRecorder()
	w := newClient(t, srv, core.WithOwner("waiter-W"), core.WithObserver(rec))
	ctx := testkit.Context(t, 30*time.Second)
	const key, n = "waitedfor:n", 5
	hl, err := holder.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for i := range n {
		go func() {
			l, err := w.Acquire(labelled(ctx, fmt.Sprint("w", i)), key, core.Wait(20*time.Second))
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "every caller queued, the head refused", func() bool {
		if core.Queued(w, key) != n {
			return false
		}
		for i := range n {
			if rec.attempted(fmt.Sprint("w", i), 1) {
				return true
			}
		}
		return false
	})
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := testkit.Recv(t, errs, 10*time.Second, "a waiter"); err != nil {
			t.Fatal(err)
		}
	}
	handoffs := 0
	for i := range n {
		label := fmt.Sprint("w", i)
		if !rec.metHolder(label, "holder-H", hl.Token()) {
			t.Errorf("%s was not told of holder-H/%d: %+v", label, hl.Token(), rec.events(label))
		}
		if hs := local(t, rec, label); len(hs) > core.MaxQueuedHolders+1 {
			t.Errorf("%s: %d holders through the local queue, more than the bound", label, len(hs))
		}
		res, info := rec.end(label)
		if res.Outcome != core.OutcomeAcquired || info.Owner != "waiter-W" {
			t.Errorf("%s: %v, owner %q", label, res.Outcome, info.Owner)
		}
		if res.Handoff {
			handoffs++
		}
		if res.Attempts == 0 && !res.Handoff {
			t.Errorf("%s acquired with no attempt and no hand-off", label)
		}
	}
	if handoffs == 0 {
		t.Error("no acquire was handed the lock by a lease of its Client")
	}
}

// A caller queued behind its Client's head, while the head meets holder A
// of another process and then holder B (the release granted the lock to
// B's process, queued in Redis first), is told of A and then B, once each,
// and of the head's own lease it was handed the lock by.
func TestQueuedWaiterToldOfEachHolder(t *testing.T) {
	srv := redistest.Start(t)
	a := newClient(t, srv, core.WithOwner("holder-A"))
	recB := newWaitRecorder()
	b := newClient(t, srv, core.WithOwner("holder-B"), core.WithObserver(recB))
	rec := newWaitRecorder()
	w := newClient(t, srv, core.WithOwner("waiter-W"), core.WithObserver(rec))
	ctx := testkit.Context(t, 30*time.Second)
	const key = "waitedfor:ab"
	la, err := a.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// B is refused twice (the second time subscribed, so queued in Redis),
	// then W's head is, then W's second caller queues behind the head.
	bres := startWaiter(labelled(ctx, "b"), b, key)
	testkit.WaitFor(t, 10*time.Second, "B queued in Redis", func() bool { return recB.attempted("b", 2) })
	done := make(chan error, 2)
	run := func(label string) {
		l, err := w.Acquire(labelled(ctx, label), key, core.Wait(25*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		done <- err
	}
	go run("head")
	testkit.WaitFor(t, 10*time.Second, "W's head queued in Redis", func() bool { return rec.attempted("head", 2) })
	go run("x")
	testkit.WaitFor(t, 10*time.Second, "x queued behind the head", func() bool { return core.Queued(w, key) == 2 })

	if err := la.Release(ctx); err != nil { // granted to B's process
		t.Fatal(err)
	}
	rb := testkit.Recv(t, bres, 10*time.Second, "B's acquire")
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	// The head's next attempt (it refreshes its place in Redis) meets B.
	testkit.WaitFor(t, 10*time.Second, "the head to meet B", func() bool { return rec.metHolder("head", "holder-B", rb.l.Token()) })
	if err := rb.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := testkit.Recv(t, done, 10*time.Second, "W's callers"); err != nil {
			t.Fatal(err)
		}
	}
	hs := local(t, rec, "x")
	ia := slices.IndexFunc(hs, func(h core.Holder) bool { return h.Owner == "holder-A" && h.Token == la.Token() })
	ib := slices.IndexFunc(hs, func(h core.Holder) bool { return h.Owner == "holder-B" && h.Token == rb.l.Token() })
	if ia < 0 || ib < 0 || ia > ib {
		t.Fatalf("x was told of %+v through the queue, want holder-A/%d then holder-B/%d", hs, la.Token(), rb.l.Token())
	}
	if !hs[ib].Seen.After(hs[ia].Seen) {
		t.Errorf("B seen at %v, not after A at %v", hs[ib].Seen, hs[ia].Seen)
	}
	hres, _ := rec.end("head")
	xres, _ := rec.end("x")
	if !xres.Handoff || xres.Attempts != 0 || !slices.ContainsFunc(hs, func(h core.Holder) bool { return h.Owner == "waiter-W" && h.Token == hres.Token }) {
		t.Fatalf("x: handoff %v after %d attempts, told of %+v; want the head's lease (token %d) to hand it over", xres.Handoff, xres.Attempts, hs, hres.Token)
	}
	if hres.Handoff || hres.Attempts < 3 {
		t.Errorf("head: handoff %v after %d attempts, want its own attempts", hres.Handoff, hres.Attempts)
	}
}

// However many holders come and go while a caller waits behind its head,
// it is told of at most core.MaxQueuedHolders through the queue, the
// latest ones. (The holders here are Redis rewritten under the lock, as
// a takeover would; TryAcquire of the same Client meets each.)
func TestQueuedHoldersBounded(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv, core.WithOwner("holder-0"))
	rec := newWaitRecorder()
	w := newClient(t, srv, core.WithOwner("waiter-W"), core.WithObserver(rec))
	ctx := testkit.Context(t, 30*time.Second)
	const key = "waitedfor:bound"
	hl, err := holder.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	run := func(label string) {
		l, err := w.Acquire(labelled(ctx, label), key, core.Wait(25*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		done <- err
	}
	go run("head")
	testkit.WaitFor(t, 10*time.Second, "the head refused", func() bool { return rec.attempted("head", 1) })
	go run("x")
	testkit.WaitFor(t, 10*time.Second, "x queued behind the head", func() bool { return core.Queued(w, key) == 2 })
	const many = 3 * core.MaxQueuedHolders
	last := hl.Token()
	for i := 1; i <= many; i++ {
		last = hl.Token() + int64(i)
		owner := fmt.Sprint("holder-", i)
		if err := srv.Client.HSet(ctx, hashKey(key), "w", owner, "f", last).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := w.TryAcquire(ctx, key)
		var na *core.NotAcquiredError
		if !errors.As(err, &na) || na.Holder.Owner != owner {
			t.Fatalf("TryAcquire = %v, want refused by %s", err, owner)
		}
	}
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := testkit.Recv(t, done, 10*time.Second, "W's callers"); err != nil {
			t.Fatal(err)
		}
	}
	hs := local(t, rec, "x")
	if len(hs) == 0 || len(hs) > core.MaxQueuedHolders {
		t.Fatalf("x was told of %d holders through the queue, want 1..%d", len(hs), core.MaxQueuedHolders)
	}
	if !slices.ContainsFunc(hs, func(h core.Holder) bool { return h.Owner == fmt.Sprint("holder-", many) && h.Token == last }) {
		t.Errorf("x was not told of the last holder: %+v", hs)
	}
}

// queuedBehind is a lock held by holder-H of another Client, and the head
// of waiter-W's local queue waiting for it, its first attempt refused.
type queuedBehind struct {
	ctx  context.Context
	w    *core.Client
	rec  *waitRecorder
	hl   *core.Lease
	head <-chan acquired
}

func newQueuedBehind(t *testing.T, key string) *queuedBehind {
	t.Helper()
	srv := redistest.Start(t)
	holder := newClient(t, srv, core.WithOwner("holder-H"))
	q := &queuedBehind{rec: newWaitRecorder(), ctx: testkit.Context(t, 30*time.Second)}
	q.w = newClient(t, srv, core.WithOwner("waiter-W"), core.WithObserver(q.rec))
	var err error
	if q.hl, err = holder.Acquire(q.ctx, key); err != nil {
		t.Fatal(err)
	}
	q.head = startWaiter(labelled(q.ctx, "head"), q.w, key, core.Wait(20*time.Second))
	testkit.WaitFor(t, 10*time.Second, "the head refused", func() bool { return q.rec.attempted("head", 1) })
	return q
}

// finish releases holder-H's lease; the head then gets the lock.
func (q *queuedBehind) finish(t *testing.T) {
	t.Helper()
	if err := q.hl.Release(q.ctx); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, q.head, 10*time.Second, "the head")
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.l.Release(q.ctx)
}

// NoWait refused inside the Client while its queue waits for a holder of
// another process (no lease of its own holds the lock) names that holder,
// without a round trip, and tells the Observer (attempt 0).
func TestNoWaitRefusalNamesQueuedHolder(t *testing.T) {
	const key = "waitedfor:nowait"
	q := newQueuedBehind(t, key)
	rec, hl := q.rec, q.hl
	_, err := q.w.Acquire(labelled(q.ctx, "nowait"), key, core.NoWait())
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Holder.Owner != "holder-H" || na.Holder.Token != hl.Token() {
		t.Fatalf("NoWait = %v, want refused naming holder-H/%d", err, hl.Token())
	}
	if ev := rec.events("nowait"); len(ev) != 1 || ev[0].attempt != 0 || ev[0].h.Token != hl.Token() {
		t.Fatalf("NoWait told the Observer %+v, want holder-H once, attempt 0", ev)
	}
	if res, _ := rec.end("nowait"); res.Outcome != core.OutcomeContended || res.Attempts != 0 || res.Holder.Token != hl.Token() {
		t.Fatalf("NoWait ended %v after %d attempts, holder %d", res.Outcome, res.Attempts, res.Holder.Token)
	}
	q.finish(t)
}

// A caller whose budget runs out while it waits behind its Client's head
// names the holder the head met, in its error and to the Observer.
func TestQueuedTimeoutNamesHolder(t *testing.T) {
	const key = "waitedfor:timeout"
	q := newQueuedBehind(t, key)
	rec, hl := q.rec, q.hl
	_, err := q.w.Acquire(labelled(q.ctx, "x"), key, core.Wait(300*time.Millisecond))
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || !na.Timeout() || na.Holder.Owner != "holder-H" || na.Holder.Token != hl.Token() {
		t.Fatalf("queued acquire = %v, want a timeout naming holder-H/%d", err, hl.Token())
	}
	if res, _ := rec.end("x"); res.Outcome != core.OutcomeTimeout || res.Attempts != 0 || !rec.metHolder("x", "holder-H", hl.Token()) {
		t.Fatalf("x ended %v after %d attempts, told of %+v", res.Outcome, res.Attempts, rec.events("x"))
	}
	q.finish(t)
}

// pastDeadline is a context whose deadline has passed but whose timer has
// not marked it done (nor ever will here): what go-redis sees for a moment
// at every deadline, stretched.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// An acquire ended by the caller's context has one outcome, whoever
// classifies its error and when: the Observer's AcquireEnd, Classify by an
// adapter afterwards, the error itself. Even when ctx.Err() has not caught
// up with the deadline (it said nil, and the outcome was unavailable).
func TestContextOutcomeAgrees(t *testing.T) {
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	rec := newWaitRecorder()
	w := newClient(t, srv, core.WithObserver(rec))
	ctx := testkit.Context(t, 30*time.Second)
	const key = "waitedfor:ctx"
	hl, err := holder.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hl.Release(ctx) }()

	dl, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	cc, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel2)
	for _, tc := range []struct {
		label string
		ctx   context.Context
		want  core.Outcome
		is    error
	}{
		{"deadline", dl, core.OutcomeDeadline, context.DeadlineExceeded},
		{"canceled", cc, core.OutcomeCanceled, context.Canceled},
		{"late timer", pastDeadline{ctx}, core.OutcomeDeadline, context.DeadlineExceeded},
		{"late timer, free lock", pastDeadline{ctx}, core.OutcomeDeadline, context.DeadlineExceeded},
	} {
		k := key
		if tc.label == "late timer, free lock" {
			k = key + ":free"
		}
		_, err := w.Acquire(labelled(tc.ctx, tc.label), k)
		res, _ := rec.end(tc.label)
		if !errors.Is(err, tc.is) || res.Outcome != tc.want || core.Classify(tc.ctx, err) != tc.want || core.Classify(nil, err) != tc.want {
			t.Errorf("%s: err %v; Observer %v, Classify %v (nil ctx: %v); want %v", tc.label, err, res.Outcome,
				core.Classify(tc.ctx, err), core.Classify(nil, err), tc.want)
		}
	}
}
