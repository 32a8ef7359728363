// Package testkit holds the few helpers every test package of lockkit uses
// with real redis-server processes (internal/redistest): a Client closed at
// cleanup, a bounded context, and waiting on cheap local state.
package testkit

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/redis/go-redis/v9"
)

// Client returns a core.Client on rdb, closed at cleanup. Give each Client
// its own go-redis client (redistest.Server.NewClient) when it stands for a
// separate process.
func Client(t testing.TB, rdb redis.UniversalClient, opts ...core.Option) *core.Client {
	t.Helper()
	c, err := core.New(rdb, opts...)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Context is a context ending after d, cancelled at cleanup.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond — cheap local state: a counter, an Observer's record,
// a queue length — until it holds, failing the test after the loose limit.
// It is for state no channel announces; await a signal where there is one.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Recv receives from ch, failing the test after limit instead of hanging
// the whole package when what never arrives.
func Recv[T any](t testing.TB, ch <-chan T, limit time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("timed out after %v waiting for %s", limit, what)
		panic("unreachable")
	}
}

// LiveHeap is the heap in use (HeapAlloc) after two full collections
// (sync.Pools keep their contents through one): what a table that is never
// emptied would make grow, for the tests that flood a Client or an adapter
// with distinct keys, methods and paths.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// EachCommand is a go-redis hook that calls itself with every command its
// client sends, alone or in a pipeline, before the command goes out: a
// test's witness of what a client sent.
type EachCommand func(redis.Cmder)

func (f EachCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f EachCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}

func (f EachCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			f(cmd)
		}
		return next(ctx, cmds)
	}
}

// Tables is c.Stats() by table name, for tests that compare every table
// of a Client with a baseline after a flood.
func Tables(c *core.Client) map[string]int {
	s := c.Stats()
	return map[string]int{
		"queues": s.Queues, "waiters": s.Waiters,
		"subscriptions": s.Subscriptions, "leases": s.Leases, "renewals": s.Renewals,
	}
}

// Logs is an io.Writer that keeps what a logger writes, one entry a line,
// for tests that count what was logged (slog.New(slog.NewTextHandler(logs,
// nil)), echo's Logger.SetOutput, grpclog.NewLoggerV2). Safe for
// concurrent use.
type Logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.lines = append(l.lines, line)
	}
	return len(p), nil
}

// Count is how many lines logged so far contain every one of subs.
func (l *Logs) Count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}
