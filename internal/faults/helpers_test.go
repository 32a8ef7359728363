package faults_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// lockKey is the Redis key of a lock with the default prefix
// (docs/key-layout.md, v1).
func lockKey(key string) string { return "lockkit:v1:k:" + key }

func newClient(t testing.TB, rdb redis.UniversalClient, opts ...core.Option) *core.Client {
	t.Helper()
	return testkit.Client(t, rdb, opts...)
}

func newRedlock(t testing.TB, rdbs []*redis.Client, opts ...core.Option) *core.Client {
	t.Helper()
	c, err := core.NewRedlock(rdbs, opts...)
	if err != nil {
		t.Fatalf("core.NewRedlock: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientsOf returns one new go-redis client per server (as one process).
func clientsOf(srvs []*redistest.Server, mod ...func(*redis.Options)) []*redis.Client {
	out := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		out[i] = s.NewClient(mod...)
	}
	return out
}

// via returns a go-redis client for srv that connects through addr (a proxy).
func via(srv *redistest.Server, addr string, mod ...func(*redis.Options)) *redis.Client {
	return srv.NewClient(append([]func(*redis.Options){func(o *redis.Options) { o.Addr = addr }}, mod...)...)
}

func readTimeout(d time.Duration) func(*redis.Options) {
	return func(o *redis.Options) { o.ReadTimeout = d }
}

func newProxy(t testing.TB, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// recv waits for a value on ch within limit.
func recv[T any](t testing.TB, ch <-chan T, limit time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("timed out after %v waiting for %s", limit, what)
	}
	panic("unreachable")
}

// observer records the engine's events with their times.
type observer struct {
	core.NopObserver
	mu        sync.Mutex
	contended int
	ends      []core.AcquireResult
	renewedAt []time.Time
	renewErrs []error
	lostAt    []time.Time
	released  int
	renewed   chan struct{} // poked on each confirmed renewal
}

func newObserver() *observer { return &observer{renewed: make(chan struct{}, 1)} }

func (o *observer) Contended(context.Context, core.AcquireInfo, core.Holder, int) {
	o.mu.Lock()
	o.contended++
	o.mu.Unlock()
}

func (o *observer) AcquireEnd(ctx context.Context, _ core.AcquireInfo, r core.AcquireResult) context.Context {
	o.mu.Lock()
	o.ends = append(o.ends, r)
	o.mu.Unlock()
	return ctx
}

func (o *observer) Renewed(_ context.Context, _ core.LeaseInfo, err error) {
	o.mu.Lock()
	if err == nil {
		o.renewedAt = append(o.renewedAt, time.Now())
	} else {
		o.renewErrs = append(o.renewErrs, err)
	}
	o.mu.Unlock()
	if err == nil {
		select {
		case o.renewed <- struct{}{}:
		default:
		}
	}
}

func (o *observer) Lost(context.Context, core.LeaseInfo, error) {
	o.mu.Lock()
	o.lostAt = append(o.lostAt, time.Now())
	o.mu.Unlock()
}

func (o *observer) Released(context.Context, core.LeaseInfo, error) {
	o.mu.Lock()
	o.released++
	o.mu.Unlock()
}

type obsCounts struct {
	contended, ends, renewed, renewErrs, lost, released int
}

func (o *observer) counts() obsCounts {
	o.mu.Lock()
	defer o.mu.Unlock()
	return obsCounts{o.contended, len(o.ends), len(o.renewedAt), len(o.renewErrs), len(o.lostAt), o.released}
}

// cmdLog records when each command left a client (add, as a
// testkit.EachCommand hook): a witness of what a lease's client sent after
// some moment.
type cmdLog struct {
	mu   sync.Mutex
	sent []sentCmd
}

type sentCmd struct {
	at   time.Time
	name string
	args string
}

func (l *cmdLog) add(cmd redis.Cmder) {
	var b strings.Builder
	for i, a := range cmd.Args() {
		if i > 0 {
			b.WriteByte(' ')
		}
		if s, ok := a.(string); ok {
			b.WriteString(s)
		} else {
			b.WriteString("?")
		}
	}
	l.mu.Lock()
	l.sent = append(l.sent, sentCmd{time.Now(), cmd.Name(), b.String()})
	l.mu.Unlock()
}

// since returns the commands sent at or after t.
// since returns what was sent from t on that could keep or take a lock.
// The owner-checked release a lost lease sends best effort (it can only free
// the lock, never extend it) is left out: it is the one command whose
// arguments carry the lock's notification channel (lockkit:v1:c:...).
func (l *cmdLog) since(t time.Time) []sentCmd {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sentCmd
	for _, c := range l.sent {
		if !c.at.Before(t) && !strings.Contains(c.args, ":v1:c:") {
			out = append(out, c)
		}
	}
	return out
}

// verdict asserts the independent witnesses of a scenario: believed-hold
// overlaps (none unless wantOverlap; then at least one), fencing tokens in
// hold order, stale writes rejected as expected and no lost update.
func verdict(t testing.TB, h *faults.History, r *faults.Resource, wantOverlap bool) {
	t.Helper()
	ov := h.Overlaps()
	switch {
	case wantOverlap && len(ov) == 0:
		t.Errorf("the checker saw no believed-hold overlap; history: %v", h.Intervals())
	case !wantOverlap && len(ov) > 0:
		t.Errorf("believed holds overlap: %v", ov)
	}
	for _, o := range ov {
		t.Logf("checker: %v", o)
	}
	if inv := h.TokenInversions(); len(inv) > 0 {
		t.Errorf("fencing tokens not increasing in hold order: %v", inv)
	}
	if r != nil {
		if st := r.Stats(); st.LostUpdates != 0 {
			t.Errorf("fenced resource: %d lost updates (%+v)", st.LostUpdates, st)
		}
	}
}

// noLeftovers waits (up to limit: a lock stranded on a hung node lives until
// its TTL) until none of rdbs has an owned lock hash or a key without TTL.
func noLeftovers(t testing.TB, limit time.Duration, rdbs ...redis.UniversalClient) {
	t.Helper()
	ctx := testkit.Context(t, limit+5*time.Second)
	deadline := time.Now().Add(limit)
	for _, rdb := range rdbs {
		for {
			lo, err := faults.LeftLocks(ctx, rdb, "lockkit:")
			if err == nil && len(lo) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("locks left behind after %v: %s %v", limit, faults.FormatLeftovers(lo), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func isLost(l *core.Lease) bool {
	return errors.Is(context.Cause(l.Context()), core.ErrLost) && errors.Is(l.Err(), core.ErrLost)
}

// pipelineHook is a go-redis hook that calls itself with the commands of
// each pipeline before the pipeline is sent.
type pipelineHook func(cmds []redis.Cmder)

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h(cmds)
		return next(ctx, cmds)
	}
}

// flushBeforePipelines empties srv's script cache right before each
// pipeline: every EVALSHA in a pipeline then gets NOSCRIPT, as under a
// SCRIPT FLUSH racing each SCRIPT LOAD.
func flushBeforePipelines(ctx context.Context, srv *redistest.Server) pipelineHook {
	return func([]redis.Cmder) { srv.Client.ScriptFlush(ctx) }
}
