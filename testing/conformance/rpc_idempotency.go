package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// RunRPCIdempotency runs every RPC idempotency scenario against adapter a
// (both replicas served by a).
func RunRPCIdempotency(t *testing.T, a RPCAdapter) {
	for _, sc := range rpcIdempotencyScenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, a, a) })
	}
	t.Run("a streaming method configured is refused at construction", func(t *testing.T) { RPCIdempotentStreamRefused(t, a) })
}

// RunRPCIdempotencyPair runs the RPC idempotency scenarios with replica A
// served by a and B by b: a retry that reaches the other protocol gets
// the same answer.
func RunRPCIdempotencyPair(t *testing.T, a, b RPCAdapter) {
	for _, sc := range rpcIdempotencyScenarios {
		t.Run(sc.name+" "+a.Name+"+"+b.Name, func(t *testing.T) { sc.run(t, a, b) })
	}
}

var rpcIdempotencyScenarios = []struct {
	name string
	run  func(*testing.T, RPCAdapter, RPCAdapter)
}{
	{"a retry gets the stored answer, replayed", RPCIdempotentRetry},
	{"a retry without a lock gets the stored answer", RPCIdempotentRetryNoLock},
	{"concurrent duplicates run once", RPCIdempotentConcurrent},
	{"concurrent duplicates that wait get the one answer", RPCIdempotentConcurrentWait},
	{"another message under the key is FailedPrecondition before Aborted", RPCIdempotentMismatch},
	{"a missing or invalid key is InvalidArgument", RPCIdempotentKeyRules},
	{"another tenant runs on its own", RPCIdempotentScope},
	{"a failed call is not stored", RPCIdempotentFailures},
	{"redis down is Unavailable", RPCIdempotentRedisDown},
}

// idemKey is the idempotency key metadata of a call.
func idemKey(k string) []string { return []string{"idempotency-key", k} }

// runCounter is an Answer that counts its runs and answers "run-<n>".
func runCounter(runs *atomic.Int32) func(context.Context, string, *core.Lease) (string, error) {
	return func(_ context.Context, id string, claim *core.Lease) (string, error) {
		if claim == nil {
			return "", errors.New("no idempotency claim in the handler's context")
		}
		return fmt.Sprintf("run-%d-%s", runs.Add(1), id), nil
	}
}

func wantAnswer(t *testing.T, what string, r Reply, value string, replayed bool) {
	t.Helper()
	switch {
	case r.Err != nil || r.Code != guard.CodeOK:
		t.Errorf("%s: code %d %q %v, want OK", what, r.Code, r.Message, r.Err)
	case r.Value != value:
		t.Errorf("%s: value %q, want %q", what, r.Value, value)
	case r.Replayed != replayed:
		t.Errorf("%s: replayed %v, want %v", what, r.Replayed, replayed)
	case r.Location != "/answers/"+value:
		t.Errorf("%s: location %q, want the handler's", what, r.Location)
	case replayed && r.XAnswer != "":
		t.Errorf("%s: x-answer %q replayed, it is not allow-listed", what, r.XAnswer)
	}
}

func idemMethod(runs *atomic.Int32, idem RPCIdempotency) Method {
	return Method{Name: "Pay", Prefix: "order", Field: "value", NoWait: true, Idempotency: &idem, Answer: runCounter(runs)}
}

// RPCIdempotentRetry: a sequential retry, on either replica, gets the first
// run's message and allow-listed metadata, marked replayed; the handler
// ran once.
func RPCIdempotentRetry(t *testing.T, a, b RPCAdapter) { rpcIdempotentRetry(t, a, b, false) }

// RPCIdempotentRetryNoLock: RPCIdempotentRetry with idempotency alone, no lock.
func RPCIdempotentRetryNoLock(t *testing.T, a, b RPCAdapter) { rpcIdempotentRetry(t, a, b, true) }

func rpcIdempotentRetry(t *testing.T, a, b RPCAdapter, noLock bool) {
	var runs atomic.Int32
	e := newRPCEnv(t, a, b, idemMethod(&runs, RPCIdempotency{Required: true, NoLock: noLock}))
	ctx := testkit.Context(t, 30*time.Second)
	first := e.reps[0].call.Call(ctx, "Pay", "42", idemKey("k-1")...)
	wantAnswer(t, "first call", first, "run-1-42", false)
	if first.XAnswer != "run-1-42" {
		t.Errorf("first call: x-answer %q, want the handler's", first.XAnswer)
	}
	for i := range 4 {
		wantAnswer(t, fmt.Sprintf("retry %d", i), e.reps[i%2].call.Call(ctx, "Pay", "42", idemKey("k-1")...), "run-1-42", true)
	}
	wantAnswer(t, "another key", e.reps[1].call.Call(ctx, "Pay", "42", idemKey(`"k-2"`)...), "run-2-42", false)
	wantAnswer(t, "its quoted spelling bare", e.reps[0].call.Call(ctx, "Pay", "42", idemKey("k-2")...), "run-2-42", true)
	if n := runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2", n)
	}
}

// RPCIdempotentConcurrent: 20 concurrent copies of one call, across replicas,
// while its run is held: one runs, the rest are Aborted with a retry hint;
// after it, a retry is the replay.
func RPCIdempotentConcurrent(t *testing.T, a, b RPCAdapter) {
	var runs atomic.Int32
	release := make(chan struct{})
	m := idemMethod(&runs, RPCIdempotency{})
	count := m.Answer
	m.Answer = func(ctx context.Context, id string, claim *core.Lease) (string, error) {
		<-release
		return count(ctx, id, claim)
	}
	e := newRPCEnv(t, a, b, m)
	ctx := testkit.Context(t, 60*time.Second)
	const n = 20
	replies := make([]Reply, n)
	var wg, refused sync.WaitGroup
	refused.Add(n - 1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = e.reps[i%2].call.Call(ctx, "Pay", "7", idemKey("dup")...)
			if replies[i].Code != guard.CodeOK {
				refused.Done()
			}
		}()
	}
	refused.Wait() // every copy but the running one answered
	close(release)
	wg.Wait()
	ok := 0
	for i, r := range replies {
		if r.Code == guard.CodeOK {
			ok++
			wantAnswer(t, "the run", r, "run-1-7", false)
			continue
		}
		wantReply(t, fmt.Sprintf("copy %d", i), r, guard.CodeAborted, true)
	}
	if ok != 1 || runs.Load() != 1 {
		t.Errorf("%d copies answered OK, the handler ran %d times; want 1 and 1", ok, runs.Load())
	}
	wantAnswer(t, "a retry after", e.reps[1].call.Call(ctx, "Pay", "7", idemKey("dup")...), "run-1-7", true)
}

// RPCIdempotentConcurrentWait: with a wait, 12 concurrent copies all get the one
// run's answer (what gRPC hedging's copies need).
func RPCIdempotentConcurrentWait(t *testing.T, a, b RPCAdapter) {
	var runs, started atomic.Int32
	release := make(chan struct{})
	m := idemMethod(&runs, RPCIdempotency{Wait: 30 * time.Second})
	count := m.Answer
	m.Answer = func(ctx context.Context, id string, claim *core.Lease) (string, error) {
		started.Add(1)
		<-release
		return count(ctx, id, claim)
	}
	e := newRPCEnv(t, a, b, m)
	ctx := testkit.Context(t, 60*time.Second)
	const n = 12
	replies := make([]Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = e.reps[i%2].call.Call(ctx, "Pay", "8", idemKey("hedge")...)
		}()
	}
	// Every copy waits once the claim was found in progress n-1 times.
	e.awaitContended(t, n-1)
	close(release)
	wg.Wait()
	replayed := 0
	for i, r := range replies {
		wantAnswer(t, fmt.Sprintf("copy %d", i), r, "run-1-8", r.Replayed)
		if r.Replayed {
			replayed++
		}
	}
	if runs.Load() != 1 || replayed != n-1 {
		t.Errorf("the handler ran %d times, %d copies replayed; want 1 and %d", runs.Load(), replayed, n-1)
	}
}

// awaitContended waits until the replicas' Observers saw n contended
// claims in all.
func (e *rpcEnv) awaitContended(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := 0
		for _, rep := range e.reps {
			got += rep.obs.rpcIdempotentContended()
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d contended claims seen, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RPCIdempotentMismatch: another message under a key is FailedPrecondition,
// decided before in-progress (while the first run is held) and after it;
// neither runs the handler.
func RPCIdempotentMismatch(t *testing.T, a, b RPCAdapter) {
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	m := idemMethod(&runs, RPCIdempotency{})
	count := m.Answer
	m.Answer = func(ctx context.Context, id string, claim *core.Lease) (string, error) {
		close(started) // a second run would panic: the witness
		<-release
		return count(ctx, id, claim)
	}
	e := newRPCEnv(t, a, b, m)
	ctx := testkit.Context(t, 30*time.Second)
	done := make(chan Reply, 1)
	go func() { done <- e.reps[0].call.Call(ctx, "Pay", "1", idemKey("reused")...) }()
	<-started
	wantReply(t, "a copy while the first runs", e.reps[1].call.Call(ctx, "Pay", "1", idemKey("reused")...), guard.CodeAborted, true)
	wantReply(t, "another message while the first runs", e.reps[1].call.Call(ctx, "Pay", "2", idemKey("reused")...), guard.CodeFailedPrecondition, false)
	close(release)
	wantAnswer(t, "the first", <-done, "run-1-1", false)
	wantReply(t, "another message after", e.reps[0].call.Call(ctx, "Pay", "2", idemKey("reused")...), guard.CodeFailedPrecondition, false)
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want 1", runs.Load())
	}
}

// RPCIdempotentKeyRules: a required key missing, or one that is no idempotency key
// (too long, a space in a bare key, two keys, an unclosed quote), is InvalidArgument and runs
// nothing; an optional one missing runs the call unrecorded.
func RPCIdempotentKeyRules(t *testing.T, a, b RPCAdapter) {
	var runs, optional atomic.Int32
	req := idemMethod(&runs, RPCIdempotency{Required: true})
	opt := Method{Name: "Opt", Prefix: "opt", Field: "value", NoWait: true, Idempotency: &RPCIdempotency{},
		Answer: func(_ context.Context, id string, claim *core.Lease) (string, error) {
			if claim != nil {
				return "", errors.New("a claim without a key")
			}
			return fmt.Sprintf("opt-%d", optional.Add(1)), nil
		}}
	e := newRPCEnv(t, a, b, req, opt)
	ctx := testkit.Context(t, 30*time.Second)
	wantReply(t, "missing", e.reps[0].call.Call(ctx, "Pay", "1"), guard.CodeInvalidArgument, false)
	for i, k := range []string{strings.Repeat("k", guard.MaxIdempotencyKeyLen+1), "a b", "a, b", `"unclosed`} {
		wantReply(t, fmt.Sprintf("key %d", i), e.reps[i%2].call.Call(ctx, "Pay", "1", idemKey(k)...), guard.CodeInvalidArgument, false)
	}
	wantReply(t, "sent twice", e.reps[1].call.Call(ctx, "Pay", "1", append(idemKey("a"), idemKey("b")...)...), guard.CodeInvalidArgument, false)
	if n := runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times, want 0", n)
	}
	wantAnswer(t, "optional, missing", e.reps[0].call.Call(ctx, "Opt", "1"), "opt-1", false)
	wantAnswer(t, "optional, missing again", e.reps[1].call.Call(ctx, "Opt", "1"), "opt-2", false)
	wantAnswer(t, "the longest key", e.reps[0].call.Call(ctx, "Pay", "1", idemKey(strings.Repeat("k", guard.MaxIdempotencyKeyLen))...), "run-1-1", false)
}

// RPCIdempotentScope: one key sent by two tenants is two records: each runs
// and replays its own answer.
func RPCIdempotentScope(t *testing.T, a, b RPCAdapter) {
	var runs atomic.Int32
	e := newRPCEnv(t, a, b, idemMethod(&runs, RPCIdempotency{Scope: "x-tenant"}))
	ctx := testkit.Context(t, 30*time.Second)
	call := func(rep int, tenant string) Reply {
		return e.reps[rep].call.Call(ctx, "Pay", "5", append(idemKey("same"), "x-tenant", tenant)...)
	}
	wantAnswer(t, "tenant a", call(0, "a"), "run-1-5", false)
	wantAnswer(t, "tenant b", call(1, "b"), "run-2-5", false)
	wantAnswer(t, "tenant a again", call(1, "a"), "run-1-5", true)
	wantAnswer(t, "tenant b again", call(0, "b"), "run-2-5", true)
	wantReply(t, "no tenant", e.reps[0].call.Call(ctx, "Pay", "5", idemKey("same")...), guard.CodeInvalidArgument, false)
}

// RPCIdempotentFailures: a call that fails (any code) is not stored: its
// retry runs again, and its answer is the one stored.
func RPCIdempotentFailures(t *testing.T, a, b RPCAdapter) {
	var runs atomic.Int32
	m := idemMethod(&runs, RPCIdempotency{})
	count := m.Answer
	m.Answer = func(ctx context.Context, id string, claim *core.Lease) (string, error) {
		if runs.Load() == 0 && id == "fail" {
			runs.Add(1)
			return "", errors.New("the first run fails")
		}
		return count(ctx, id, claim)
	}
	e := newRPCEnv(t, a, b, m)
	ctx := testkit.Context(t, 30*time.Second)
	if r := e.reps[0].call.Call(ctx, "Pay", "fail", idemKey("retry-me")...); r.Code == guard.CodeOK {
		t.Fatalf("the failing run answered OK")
	}
	wantAnswer(t, "the retry runs", e.reps[1].call.Call(ctx, "Pay", "fail", idemKey("retry-me")...), "run-2-fail", false)
	wantAnswer(t, "the next retry replays", e.reps[0].call.Call(ctx, "Pay", "fail", idemKey("retry-me")...), "run-2-fail", true)
}

// RPCIdempotentRedisDown: with Redis down a keyed call is Unavailable with a
// retry hint, and runs nothing.
func RPCIdempotentRedisDown(t *testing.T, a, b RPCAdapter) {
	var runs atomic.Int32
	e := newRPCEnv(t, a, b, idemMethod(&runs, RPCIdempotency{NoLock: true}))
	ctx := testkit.Context(t, 60*time.Second)
	wantAnswer(t, "with Redis up", e.reps[0].call.Call(ctx, "Pay", "1", idemKey("up")...), "run-1-1", false)
	e.srv.Kill()
	wantReply(t, "with Redis down", e.reps[1].call.Call(ctx, "Pay", "2", idemKey("down")...), guard.CodeUnavailable, true)
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want 1", runs.Load())
	}
}

// RPCIdempotentStreamRefused: a streaming method configured for idempotency is
// refused when the adapter builds it.
func RPCIdempotentStreamRefused(t *testing.T, a RPCAdapter) {
	srv := redistest.Start(t)
	c, err := core.New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m := Method{Name: "Upload", Stream: true, Prefix: "up", Field: "value", Idempotency: &RPCIdempotency{},
		StreamHandler: func(context.Context, func() (string, error)) error { return nil }}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "stream") {
			t.Errorf("Serve of an idempotent stream: %v, want a panic that names the stream", r)
		}
	}()
	a.Serve(t, c, m)
}

// rpcIdempotentContended is how many times r heard Contended.
func (r *recorder) rpcIdempotentContended() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.contended
}
