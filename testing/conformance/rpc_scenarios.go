package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// RunRPC runs every RPC scenario against adapter a (both replicas served
// by a).
func RunRPC(t *testing.T, a RPCAdapter) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T, RPCAdapter, RPCAdapter)
	}{
		{"exclusion across replicas", RPCExclusion},
		{"no-wait duplicates get Aborted with a retry hint", RPCNoWait},
		{"limit answers ResourceExhausted", RPCLimit},
		{"redis killed", RPCRedisDown},
		{"bad and misconfigured keys", RPCBadKeys},
		{"binary metadata, padded or not, is one key", RPCBinaryMetadata},
		{"identical answers for each outcome", RPCIdenticalAnswers},
		{"a nil On* responder is the default answer", RPCNilResponders},
		{"MaxHold ends the handler's context and frees the lock", RPCMaxHold},
		{"an idle stream past MaxHold frees the lock", RPCIdleStream},
		{"a stream blocked in a send past MaxHold frees the lock", RPCMaxHoldBlockedSend},
		{"MaxWaiters through AcquireOptions bounds the queue", RPCMaxWaiters},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, a, a) })
	}
}

// RunRPCPair runs the RPC scenarios that involve two replicas with replica
// A served by a and replica B by b: the same resource served by two
// protocols.
func RunRPCPair(t *testing.T, a, b RPCAdapter) {
	t.Run("exclusion "+a.Name+"+"+b.Name, func(t *testing.T) { RPCExclusion(t, a, b) })
	t.Run("identical answers "+a.Name+"+"+b.Name, func(t *testing.T) { RPCIdenticalAnswers(t, a, b) })
	t.Run("binary metadata "+a.Name+"+"+b.Name, func(t *testing.T) { RPCBinaryMetadata(t, a, b) })
	t.Run("max hold "+a.Name+"+"+b.Name, func(t *testing.T) { RPCMaxHold(t, a, b) })
	t.Run("max hold blocked send "+a.Name+"+"+b.Name, func(t *testing.T) { RPCMaxHoldBlockedSend(t, a, b) })
}

// rpcEnv is one Redis and two RPC replicas on it, each with its own Client
// (on its own go-redis client) and its own server.
type rpcEnv struct {
	t    *testing.T
	srv  *redistest.Server
	reps [2]rpcReplica
}

type rpcReplica struct {
	adapter RPCAdapter
	client  *core.Client
	obs     *recorder
	call    Caller
}

func newRPCEnv(t *testing.T, a, b RPCAdapter, methods ...Method) *rpcEnv {
	t.Helper()
	e := &rpcEnv{t: t, srv: redistest.Start(t)}
	for i, ad := range []RPCAdapter{a, b} {
		obs := newRecorder()
		c, err := core.New(e.srv.NewClient(), core.WithTTL(ttl), core.WithObserver(obs), core.WithOwner(fmt.Sprintf("%s-%c", ad.Name, 'A'+i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		e.reps[i] = rpcReplica{adapter: ad, client: c, obs: obs, call: ad.Serve(t, c, methods...)}
	}
	return e
}

// held reports whether key is locked, and by whom, asking Redis.
func (e *rpcEnv) held(ctx context.Context, key string) (core.Holder, bool) {
	e.t.Helper()
	h, ok, err := e.reps[0].client.Inspect(ctx, key)
	if err != nil {
		e.t.Fatalf("Inspect(%q): %v", key, err)
	}
	return h, ok
}

// wantReply fails unless r has code c and, for a retryable outcome, the
// retry hint of 1s both as RetryInfo and as the pushback trailer.
func wantReply(t *testing.T, what string, r Reply, c guard.Code, retry bool) {
	t.Helper()
	switch {
	case r.Err != nil:
		t.Errorf("%s: %v", what, r.Err)
	case r.Code != c:
		t.Errorf("%s: code %d %q, want %d", what, r.Code, r.Message, c)
	case retry && (!r.HasRetry || r.RetryDelay != guard.DefaultRetryAfter || r.Pushback != "1000"):
		t.Errorf("%s: retry hint %v (%v), pushback %q; want %v and \"1000\"", what, r.RetryDelay, r.HasRetry, r.Pushback, guard.DefaultRetryAfter)
	case !retry && (r.HasRetry || r.Pushback != ""):
		t.Errorf("%s: a retry hint (%v, %q) on an answer retrying cannot help", what, r.RetryDelay, r.Pushback)
	}
}

// RPCExclusion: 30 concurrent calls for one order, split across replicas a
// and b, run one at a time: a read-sleep-write counter loses no update, no
// two handlers overlap, and fencing tokens rise in handler order.
func RPCExclusion(t *testing.T, a, b RPCAdapter) {
	var (
		mu               sync.Mutex
		counter          int
		tokens           []int64
		inside, overlaps atomic.Int32
	)
	pay := Method{Name: "Pay", Prefix: "order", Field: "value", Wait: 60 * time.Second,
		Handler: func(ctx context.Context, id string, l *core.Lease, ok bool) error {
			if !ok {
				return errors.New("no lease")
			}
			if inside.Add(1) != 1 {
				overlaps.Add(1)
			}
			mu.Lock()
			v := counter
			tokens = append(tokens, l.Token())
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // a critical section worth overlapping
			mu.Lock()
			counter = v + 1
			mu.Unlock()
			inside.Add(-1)
			return nil
		}}
	e := newRPCEnv(t, a, b, pay)
	ctx := testkit.Context(t, 120*time.Second)
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if r := e.reps[i%2].call.Call(ctx, "Pay", "7"); r.Err != nil || r.Code != guard.CodeOK {
				t.Errorf("call %d: %d %q %v", i, r.Code, r.Message, r.Err)
			}
		})
	}
	wg.Wait()
	if counter != n || overlaps.Load() != 0 {
		t.Errorf("counter %d (want %d), %d handlers overlapped", counter, n, overlaps.Load())
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("fencing tokens not increasing in handler order at %d: %v", i, tokens)
		}
	}
	if e.reps[0].obs.read(func(r *recorder) bool { return r.contended == 0 }) && e.reps[1].obs.read(func(r *recorder) bool { return r.contended == 0 }) {
		t.Error("no call ever found the lock held: the calls did not contend, the test proves nothing")
	}
}

// counted is a Method handler that counts its calls and answers OK.
func counted(n *atomic.Int32) func(context.Context, string, *core.Lease, bool) error {
	return func(context.Context, string, *core.Lease, bool) error { n.Add(1); return nil }
}

// RPCNoWait: while another holds the order, a no-wait call is answered
// Aborted with the retry hint (RetryInfo and pushback trailer) without its
// handler running.
func RPCNoWait(t *testing.T, a, b RPCAdapter) {
	var calls atomic.Int32
	e := newRPCEnv(t, a, b, Method{Name: "Ship", Prefix: "order", Field: "value", NoWait: true, Handler: counted(&calls)})
	ctx := testkit.Context(t, 30*time.Second)
	l, err := e.reps[1].client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	wantReply(t, "no-wait call on a held order", e.reps[0].call.Call(ctx, "Ship", "1"), guard.CodeAborted, true)
	_ = l.Release(ctx)
	wantReply(t, "no-wait call on a free order", e.reps[0].call.Call(ctx, "Ship", "1"), guard.CodeOK, false)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// RPCLimit: with every permit of a Limit held, a call is answered
// ResourceExhausted with the retry hint.
func RPCLimit(t *testing.T, a, b RPCAdapter) {
	var calls atomic.Int32
	e := newRPCEnv(t, a, b, Method{Name: "Export", Prefix: "export", Field: "value", Limit: 2, Wait: 200 * time.Millisecond, Handler: counted(&calls)})
	ctx := testkit.Context(t, 30*time.Second)
	sem := e.reps[1].client.Semaphore("export:t1", 2)
	for range 2 {
		l, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release(context.Background()) }()
	}
	wantReply(t, "a third call", e.reps[0].call.Call(ctx, "Export", "t1"), guard.CodeResourceExhausted, true)
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
}

// RPCRedisDown: with Redis killed, a fail-closed method is answered
// Unavailable with the retry hint, its handler not run; a fail-open one
// runs unlocked, and the Observer is told.
func RPCRedisDown(t *testing.T, a, b RPCAdapter) {
	var closed, unlocked atomic.Int32
	e := newRPCEnv(t, a, b,
		Method{Name: "Closed", Prefix: "c", Field: "value", Handler: counted(&closed)},
		Method{Name: "Open", Prefix: "o", Field: "value", FailOpen: true, Handler: func(_ context.Context, _ string, _ *core.Lease, ok bool) error {
			if !ok {
				unlocked.Add(1)
			}
			return nil
		}})
	ctx := testkit.Context(t, 60*time.Second)
	wantReply(t, "with Redis up", e.reps[0].call.Call(ctx, "Closed", "1"), guard.CodeOK, false)
	e.srv.Kill()
	wantReply(t, "fail-closed with Redis down", e.reps[0].call.Call(ctx, "Closed", "2"), guard.CodeUnavailable, true)
	wantReply(t, "fail-open with Redis down", e.reps[0].call.Call(ctx, "Open", "2"), guard.CodeOK, false)
	if closed.Load() != 1 || unlocked.Load() != 1 {
		t.Errorf("fail-closed handler ran %d times (want 1), fail-open unlocked %d (want 1)", closed.Load(), unlocked.Load())
	}
	e.reps[0].obs.await(t, 5*time.Second, "the Observer's Unlocked", func(r *recorder) bool { return len(r.unlocked) == 1 })
	if err := e.reps[0].obs.unlocked[0]; !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("Unlocked told %v, want ErrUnavailable", err)
	}
}

// RPCBadKeys: an empty id, or one with a control character, is the
// caller's mistake (InvalidArgument, naming the part, never repeating the
// value), a field the message lacks the server's (Internal, naming the
// method but not the server's detail); none runs the handler.
func RPCBadKeys(t *testing.T, a, b RPCAdapter) {
	var calls atomic.Int32
	e := newRPCEnv(t, a, b,
		Method{Name: "Pay", Prefix: "order", Field: "value", Handler: counted(&calls)},
		Method{Name: "Bad", Prefix: "order", Field: "nope", Handler: counted(&calls)})
	ctx := testkit.Context(t, 30*time.Second)
	r := e.reps[0].call.Call(ctx, "Pay", "")
	wantReply(t, "empty id", r, guard.CodeInvalidArgument, false)
	if !strings.Contains(r.Message, `"value"`) {
		t.Errorf("empty id: message %q does not name the part", r.Message)
	}
	for i, id := range []string{"s3cr3t\n", "s3cr3t\x00", "a\tb", "\x7f"} {
		r := e.reps[i%2].call.Call(ctx, "Pay", id)
		wantReply(t, fmt.Sprintf("id %q on %s", id, e.reps[i%2].adapter.Name), r, guard.CodeInvalidArgument, false)
		if !strings.Contains(r.Message, "control character") || strings.Contains(r.Message, "s3cr3t") {
			t.Errorf("id %q: message %q, want one that names a control character, not the value", id, r.Message)
		}
	}
	r = e.reps[0].call.Call(ctx, "Bad", "1")
	wantReply(t, "a field the message lacks", r, guard.CodeInternal, false)
	if strings.Contains(r.Message, "nope") {
		t.Errorf("a field the message lacks: message %q names the server's detail", r.Message)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
}

// RPCBinaryMetadata: a method keyed by a binary metadata entry
// ("x-order-bin") locks the bytes it carries, decoded once, whatever the
// protocol and however the client wrote its base64: "NDI" and "NDI=" (the
// bytes 42) on replica A hold "order:42", and while one holds, a call with
// the other spelling on replica B is refused (Aborted); the bytes 43 are
// another order.
func RPCBinaryMetadata(t *testing.T, a, b RPCAdapter) {
	const md = "x-order-bin"
	entered, release := make(chan string, 1), make(chan struct{})
	e := newRPCEnv(t, a, b,
		Method{Name: "Pay", Prefix: "order", Metadata: md, Wait: 20 * time.Second, Handler: func(_ context.Context, _ string, l *core.Lease, ok bool) error {
			if !ok {
				return errors.New("no lease")
			}
			entered <- l.Key()
			<-release
			return nil
		}},
		Method{Name: "Ship", Prefix: "order", Metadata: md, NoWait: true, Handler: func(context.Context, string, *core.Lease, bool) error { return nil }})
	ctx := testkit.Context(t, 30*time.Second)
	for _, tc := range []struct {
		holder, other string
		same          bool
	}{
		{"NDI", "NDI=", true},
		{"NDI=", "NDI", true},
		{"NDI", "NDM", false},
	} {
		done := make(chan Reply, 1)
		go func() { done <- e.reps[0].call.Call(ctx, "Pay", "", md, tc.holder) }()
		if key := testkit.Recv(t, entered, 10*time.Second, "the holder's handler"); key != "order:42" {
			close(release)
			t.Fatalf("%s %q on %s locked %q, want \"order:42\"", md, tc.holder, a.Name, key)
		}
		r := e.reps[1].call.Call(ctx, "Ship", "", md, tc.other)
		release <- struct{}{}
		wantReply(t, "the holder", testkit.Recv(t, done, 10*time.Second, "the holder's reply"), guard.CodeOK, false)
		want := guard.CodeOK
		if tc.same {
			want = guard.CodeAborted
		}
		wantReply(t, fmt.Sprintf("%s %q on %s while %q on %s holds", md, tc.other, b.Name, tc.holder, a.Name), r, want, tc.same)
	}
	close(release)
}

// RPCIdenticalAnswers: every outcome that stops a call is answered with
// the same code, message, retry hint and pushback trailer by replica A and
// replica B, whatever their protocols: contended, limited, a bad key, a
// misconfigured key, Redis down.
func RPCIdenticalAnswers(t *testing.T, a, b RPCAdapter) { rpcIdenticalAnswers(t, a, b, false) }

// RPCNilResponders: methods whose On* responders were each given a custom
// answer and then nil (Method.NilResponders) answer every outcome of
// RPCIdenticalAnswers by default: in every adapter a nil responder means
// the default answer.
func RPCNilResponders(t *testing.T, a, b RPCAdapter) { rpcIdenticalAnswers(t, a, b, true) }

func rpcIdenticalAnswers(t *testing.T, a, b RPCAdapter, nilResponders bool) {
	var calls atomic.Int32
	e := newRPCEnv(t, a, b,
		Method{Name: "Ship", Prefix: "order", Field: "value", NoWait: true, NilResponders: nilResponders, Handler: counted(&calls)},
		Method{Name: "Export", Prefix: "export", Field: "value", Limit: 1, NoWait: true, NilResponders: nilResponders, Handler: counted(&calls)},
		Method{Name: "Bad", Prefix: "order", Field: "nope", NilResponders: nilResponders, Handler: counted(&calls)})
	ctx := testkit.Context(t, 60*time.Second)
	l, err := e.reps[1].client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	p, err := e.reps[1].client.Semaphore("export:1", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Release(context.Background()) }()
	for _, tc := range []struct {
		name, method, id string
		code             guard.Code
		retry            bool
	}{
		{"contended", "Ship", "1", guard.CodeAborted, true},
		{"limited", "Export", "1", guard.CodeResourceExhausted, true},
		{"bad key", "Ship", "", guard.CodeInvalidArgument, false},
		{"misconfigured", "Bad", "1", guard.CodeInternal, false},
		{"redis down", "Ship", "2", guard.CodeUnavailable, true},
	} {
		if tc.name == "redis down" {
			e.srv.Kill()
		}
		var replies [2]Reply
		for i := range e.reps {
			replies[i] = e.reps[i].call.Call(ctx, tc.method, tc.id)
			wantReply(t, tc.name+" on "+e.reps[i].adapter.Name, replies[i], tc.code, tc.retry)
		}
		if replies[0] != replies[1] {
			t.Errorf("%s: %s answered %+v, %s %+v", tc.name, a.Name, replies[0], b.Name, replies[1])
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
}

// RPCMaxHold: a call holding its lock past MaxHold (300ms) sees its
// context end with cause core.ErrMaxHold, and keeps running: the lock stays
// held by its token while it does, and a call waiting for the order on the
// other replica keeps waiting. Failing for it, the call is answered
// Aborted with a retry hint, the release-error hook hears ErrMaxHold, and
// the waiting call is served right after (TTL 30s: freed by the release,
// not the expiry), never beside it.
func RPCMaxHold(t *testing.T, a, b RPCAdapter) {
	entered, ended, proceed, returned := newSignal(), newSignal(), newSignal(), newSignal()
	defer proceed.fire() // a failing check does not park the handler
	var cause atomic.Value
	var token atomic.Int64
	var overlap atomic.Bool
	relErr := make(chan error, 4)
	pay := Method{Name: "Pay", Prefix: "order", Field: "value", Wait: 20 * time.Second, MaxHold: 300 * time.Millisecond,
		ReleaseError: func(err error) { relErr <- err },
		Handler: func(ctx context.Context, _ string, l *core.Lease, ok bool) error {
			defer returned.fire()
			if !ok {
				return errors.New("no lease")
			}
			token.Store(l.Token())
			entered.fire()
			select {
			case <-ctx.Done():
				cause.Store(context.Cause(ctx))
				ended.fire()
			case <-time.After(20 * time.Second):
				return errors.New("the context did not end at MaxHold")
			}
			select { // still running past MaxHold, until the test has looked
			case <-proceed.ch:
			case <-time.After(20 * time.Second):
			}
			return ctx.Err()
		}}
	refund := Method{Name: "Refund", Prefix: "order", Field: "value", Wait: 20 * time.Second, // the same key
		Handler: func(context.Context, string, *core.Lease, bool) error {
			select {
			case <-returned.ch:
			default:
				overlap.Store(true)
			}
			return nil
		}}
	e := newRPCEnv(t, a, b, pay, refund)
	ctx := testkit.Context(t, 60*time.Second)
	first := make(chan Reply, 1)
	go func() { first <- e.reps[0].call.Call(ctx, "Pay", "12") }()
	entered.wait(t, 10*time.Second, "the holder's handler")
	ended.wait(t, 10*time.Second, "the holder's context to end at its MaxHold")
	if c, _ := cause.Load().(error); !errors.Is(c, core.ErrMaxHold) {
		t.Fatalf("the handler's context ended with %v, want core.ErrMaxHold", c)
	}
	stillHeld := func(when string) {
		t.Helper()
		if hd, held := e.held(ctx, "order:12"); !held || hd.Token != token.Load() {
			t.Fatalf("past MaxHold, with the handler still running, %s: held %v token %d, want held with %d", when, held, hd.Token, token.Load())
		}
	}
	stillHeld("before the next call")
	next := make(chan Reply, 1)
	go func() { next <- e.reps[1].call.Call(ctx, "Refund", "12") }()
	e.reps[1].obs.await(t, 10*time.Second, "the next call on replica B to find the lock held", func(r *recorder) bool { return r.contended > 0 })
	stillHeld("with the next call waiting")
	proceed.fire()
	r := testkit.Recv(t, first, 10*time.Second, "the holder's reply")
	wantReply(t, "the call past its MaxHold", r, guard.CodeAborted, true)
	if r := testkit.Recv(t, next, 10*time.Second, "the next call"); r.Err != nil || r.Code != guard.CodeOK {
		t.Errorf("the next call: %d %q %v", r.Code, r.Message, r.Err)
	}
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("release-error hook got %v, want core.ErrMaxHold", err)
	}
	if overlap.Load() {
		t.Error("the next call ran beside the holder past its MaxHold")
	}
}

// RPCIdleStream: a client stream keyed by its first message that then stays
// silent frees its lock at MaxHold while the stream is still open (TTL
// 30s: the lock is released, it does not expire): its handler waits in a
// receive, idle. Another call then takes the key at once, and the stream,
// when the client ends it, is answered Aborted with a retry hint, as a
// call whose handler failed for its MaxHold.
func RPCIdleStream(t *testing.T, a, b RPCAdapter) {
	received := make(chan error, 1)
	e := newRPCEnv(t, a, b,
		Method{Name: "Import", Stream: true, Prefix: "tenant", Field: "value", MaxHold: 300 * time.Millisecond,
			StreamHandler: func(ctx context.Context, recv func() (string, error)) error {
				for {
					if _, err := recv(); err != nil {
						received <- err
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			}},
		Method{Name: "Settings", Prefix: "tenant", Field: "value", NoWait: true, Handler: func(context.Context, string, *core.Lease, bool) error { return nil }})
	ctx := testkit.Context(t, 60*time.Second)
	s, err := e.reps[0].call.Stream(ctx, "Import")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send("acme"); err != nil {
		t.Fatal(err)
	}
	// The lock is held for MaxHold only: wait for the acquire's event, not
	// for a look at Redis inside that window. Only the stream acquires on A.
	obs := e.reps[0].obs
	obs.await(t, 10*time.Second, "the first message to take the lock", func(r *recorder) bool { return len(r.acquired) == 1 })
	if key := obs.acquired[0]; key != "tenant:acme" {
		t.Fatalf("the first message took %q, want tenant:acme", key)
	}
	// The client stays silent, the stream open.
	testkit.WaitFor(t, 10*time.Second, "the idle stream's lock to be freed at MaxHold", func() bool { _, held := e.held(ctx, "tenant:acme"); return !held })
	wantReply(t, "a call on the idle stream's key", e.reps[1].call.Call(ctx, "Settings", "acme"), guard.CodeOK, false)
	wantReply(t, "the stream, ended after its bound", s.CloseAndReceive(), guard.CodeAborted, true)
	if err := testkit.Recv(t, received, 10*time.Second, "the handler's receive"); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("the handler's receive after the bound returned %v, want the hold's end", err)
	}
}

// RPCMaxWaiters: core.MaxWaiters(1) given through the adapter's
// AcquireOptions bounds the replica's local queue for every kind of lock
// (mutex, semaphore, read side, write side): with the lock held and one
// call waiting, four more are refused at once (Aborted, or
// ResourceExhausted for a semaphore, with the retry hint), their handlers
// not run; the first is served once the lock frees.
func RPCMaxWaiters(t *testing.T, a, b RPCAdapter) {
	for _, k := range maxWaitersKinds {
		t.Run(k.name, func(t *testing.T) {
			var calls atomic.Int32
			e := newRPCEnv(t, a, b, Method{Name: "Pay", Prefix: "order", Field: "value", Limit: k.limit, RW: k.rw, Wait: 60 * time.Second,
				AcquireOptions: []core.AcquireOption{core.MaxWaiters(1)}, Handler: counted(&calls)})
			ctx := testkit.Context(t, 60*time.Second)
			held, err := holdFor(ctx, e.reps[1].client, "order:1", k.limit, k.rw)
			if err != nil {
				t.Fatal(err)
			}
			first := make(chan Reply, 1)
			go func() { first <- e.reps[0].call.Call(ctx, "Pay", "1") }()
			testkit.WaitFor(t, 10*time.Second, "the first call waiting", func() bool { return e.reps[0].client.Stats().Waiters == 1 })
			code := guard.CodeAborted
			if k.limit > 0 {
				code = guard.CodeResourceExhausted
			}
			for range 4 {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second) // refused at once, not after a wait
				wantReply(t, "a call beyond MaxWaiters(1)", e.reps[0].call.Call(rctx, "Pay", "1"), code, true)
				cancel()
			}
			if n := e.reps[0].client.Stats().Waiters; n != 1 || calls.Load() != 0 {
				t.Errorf("after the refusals: %d waiting (want the first), %d handlers ran", n, calls.Load())
			}
			_ = held.Release(ctx)
			wantReply(t, "the first call", testkit.Recv(t, first, 30*time.Second, "the first call"), guard.CodeOK, false)
		})
	}
}
