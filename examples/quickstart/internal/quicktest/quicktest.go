// Package quicktest runs the quick starts' one scenario on each of them:
// two calls for one order take turns under its lock, and a call that does
// not wait is refused while the order is busy. Each step waits for an
// event (a handler entered its work, the lock Client counts a waiter),
// never for a duration. The quick starts' main.go files import nothing
// from here: only their tests do.
package quicktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/locktest"
)

// Patience bounds every wait for an event: generous, so that a loaded
// machine is slow but not failed.
const Patience = 60 * time.Second

// Gate is the handlers' work in a test: it says when a handler entered it
// and holds the handler there until the test lets it go, counting how many
// handlers are inside at once.
type Gate struct {
	entered  chan struct{}
	release  chan struct{}
	in, most atomic.Int32
}

// NewGate returns a Gate that lets every handler go at t's cleanup.
func NewGate(t *testing.T) *Gate {
	g := &Gate{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(g.release) })
	return g
}

// Work is the work a quick start's handler does under the lock.
func (g *Gate) Work(ctx context.Context) {
	n := g.in.Add(1)
	defer g.in.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	select {
	case g.entered <- struct{}{}:
	case <-ctx.Done():
		return
	}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
}

func (g *Gate) awaitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(Patience):
		t.Fatalf("%s: no handler entered its work within %v", what, Patience)
	}
}

// Calls are a quick start's calls for order 42, each made by the test
// through the program's own server.
type Calls struct {
	// Pay waits for the lock and returns the fencing token the handler
	// held it with.
	Pay func(ctx context.Context) (int64, error)
	// Refused makes a call that does not wait, while another holds the
	// lock, and returns nil only when it was answered as contended (409
	// with Retry-After, core.ErrNotAcquired). Nil when the program has no
	// such call.
	Refused func(ctx context.Context) error
}

// Run runs the scenario on locks, the lock Client the program under test
// was given, whose handlers work through g.
func Run(t *testing.T, locks *core.Client, g *Gate, c Calls) {
	t.Helper()
	ctx := t.Context()
	type result struct {
		token int64
		err   error
	}
	pay := func() <-chan result {
		ch := make(chan result, 1)
		go func() { tok, err := c.Pay(ctx); ch <- result{tok, err} }()
		return ch
	}
	await := func(ch <-chan result, what string) int64 {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("%s: %v", what, r.err)
			}
			return r.token
		case <-time.After(Patience):
			t.Fatalf("%s: no answer within %v", what, Patience)
			return 0
		}
	}

	first := pay()
	g.awaitEntered(t, "first payment")
	if c.Refused != nil {
		if err := c.Refused(ctx); err != nil {
			t.Fatalf("a call that does not wait, while the first payment holds order:42: %v", err)
		}
	}
	second := pay()
	WaitFor(t, "the second payment waits in the lock Client's queue", func() bool { return locks.Stats().Waiters == 1 })
	g.release <- struct{}{}
	t1 := await(first, "first payment")
	g.awaitEntered(t, "second payment, after the first released")
	g.release <- struct{}{}
	t2 := await(second, "second payment")
	if t2 <= t1 {
		t.Errorf("fencing tokens: second %d, not above the first's %d", t2, t1)
	}
	if most := g.most.Load(); most != 1 {
		t.Errorf("%d handlers worked on order 42 at once, want 1", most)
	}
}

// WaitFor polls cond until it holds, failing t after Patience.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, Patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// OpenLocks checks a quick start's openLocks: on the embedded Redis when
// REDIS_URL is unset, on the Redis REDIS_URL names otherwise (a lock taken
// through it is seen held there), and a REDIS_URL that does not parse is
// refused without its password in any spelling (exampletest.SecretURLs).
func OpenLocks(t *testing.T, open func() (*core.Client, func(), error)) {
	ctx := t.Context()
	t.Setenv("REDIS_URL", "")
	locks, closeLocks, err := open()
	if err != nil {
		t.Fatalf("embedded: %v", err)
	}
	if err := locks.Do(ctx, "order:1", func(context.Context) error { return nil }); err != nil {
		t.Errorf("embedded: %v", err)
	}
	closeLocks()

	srv := locktest.New(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr()+"/0")
	locks, closeLocks, err = open()
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	lease, err := locks.Acquire(ctx, "order:2")
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	if _, err := srv.Client().TryAcquire(ctx, "order:2"); !errors.Is(err, core.ErrNotAcquired) {
		t.Errorf("a lock taken through REDIS_URL is not held on that Redis: %v", err)
	}
	_ = lease.Release(ctx)
	closeLocks()

	for _, url := range exampletest.SecretURLs {
		t.Setenv("REDIS_URL", url)
		_, closeLocks, err := open() // a URL go-redis parses: nothing is dialled until a lock is taken
		if err != nil {
			if exampletest.ShowsSecret(err.Error(), exampletest.Secret) {
				t.Errorf("REDIS_URL %q: the password is in the error: %v", url, err)
			}
			continue
		}
		closeLocks()
	}
}

// Start runs a program's serve on a loopback listener until the test ends
// (then its shutdown must succeed), and returns the listener's address.
func Start[H any](t *testing.T, serve func(context.Context, net.Listener, H) error, h H) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return lis.Addr().String()
}

// Post sends a POST and returns its body when its status is want (and a
// 409 carries Retry-After).
func Post(ctx context.Context, url string, want int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != want || (want == http.StatusConflict && resp.Header.Get("Retry-After") == "") {
		return "", fmt.Errorf("POST %s: %d %s (Retry-After %q), want %d", url, resp.StatusCode, body, resp.Header.Get("Retry-After"), want)
	}
	return string(body), nil
}

// HTTPCalls are the calls of the quick starts that serve
// POST /orders/{id}/pay, answering "... fencing token N", and
// POST /orders/{id}/ship without waiting, on base.
func HTTPCalls(base string) Calls {
	return Calls{
		Pay: func(ctx context.Context) (int64, error) {
			body, err := Post(ctx, base+"/orders/42/pay", http.StatusOK)
			if err != nil {
				return 0, err
			}
			_, tok, _ := strings.Cut(strings.TrimSpace(body), "fencing token ")
			return strconv.ParseInt(tok, 10, 64)
		},
		Refused: func(ctx context.Context) error {
			_, err := Post(ctx, base+"/orders/42/ship", http.StatusConflict)
			return err
		},
	}
}
