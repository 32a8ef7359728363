package core_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// slowPath is a TCP proxy to Redis whose first connection, once slow is
// set, delivers what the client sends d late (in order): a command in
// transit on a slow path while the client's next connection is fast. The
// race it stages — a caller gives up, its clean-up goes on another
// connection and arrives before the attempt it cleans up after — is what
// a loaded network or a retrying client does.
type slowPath struct {
	addr string
	slow atomic.Bool
	// delayed counts the chunks the first connection delivered late: the
	// staging worked only if the client sent something on it once slow.
	delayed atomic.Int64
	// answered is closed when Redis has answered everything the first
	// connection carried and the client has closed it: the attempt in
	// transit has run.
	answered chan struct{}
}

func newSlowPath(t *testing.T, to string, d time.Duration) *slowPath {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	p := &slowPath{addr: ln.Addr().String(), answered: make(chan struct{})}
	first := true
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			isFirst := first
			first = false
			go p.answers(c, s, isFirst)
			go p.commands(c, s, isFirst, d)
		}
	}()
	return p
}

// answers copies Redis's replies to the client; on the first connection it
// reads on after the client left, until Redis closes (every command sent
// has its reply by then).
func (p *slowPath) answers(c, s net.Conn, isFirst bool) {
	if !isFirst {
		_, _ = io.Copy(c, s)
		_ = c.Close()
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			_, _ = c.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	_ = c.Close()
	_ = s.Close()
	close(p.answered)
}

// commands copies the client's commands to Redis, late on the first
// connection once slow is set, then half-closes so that Redis answers what
// it was sent and ends the connection.
func (p *slowPath) commands(c, s net.Conn, isFirst bool, d time.Duration) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := range ch {
			time.Sleep(time.Until(k.at))
			if _, err := s.Write(k.b); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			at := time.Now()
			if isFirst && p.slow.Load() {
				at = at.Add(d)
				p.delayed.Add(1)
			}
			ch <- chunk{at, append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	if tc, ok := s.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = s.Close()
	}
}

// overtakenClient returns a go-redis client whose first pooled connection
// goes through a slow path (delay d once slow is set), and a Client on it.
func overtakenClient(t *testing.T, srv *redistest.Server, d time.Duration) (*slowPath, *redis.Client, *core.Client) {
	t.Helper()
	ctx := testkit.Context(t, time.Minute)
	p := newSlowPath(t, srv.Addr(), d)
	rdb := srv.NewClient(func(o *redis.Options) { o.Addr = p.addr })
	if err := rdb.Ping(ctx).Err(); err != nil { // the pool's first connection, fast
		t.Fatal(err)
	}
	return p, rdb, newClientOn(t, rdb, core.WithOwner("x"))
}

// waitAnswered waits until x's client holds nothing (its clean-up is done)
// and the attempt in transit on the slow path has run. It fails when no
// command went through the slow path: go-redis handed the attempt another
// connection than the Ping'd first one, and the race was never staged.
func waitAnswered(t *testing.T, p *slowPath, rdb *redis.Client, x *core.Client) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "x holds and waits for nothing", func() bool {
		s := x.Stats()
		return s.Leases == 0 && s.Queues == 0
	})
	_ = rdb.Close() // ends the slow connection if go-redis kept it
	testkit.Recv(t, p.answered, 30*time.Second, "Redis answered the attempt in transit")
	if p.delayed.Load() == 0 {
		t.Fatal("no command went through the slow path")
	}
}

// TestWriterGiveBackOvertakenByAttempt: a writer's attempt cut by its wait
// budget while in transit is given back at once on another connection; when
// the give-back arrives first, the attempt must not then take the lock for
// a token nobody has (the released token's tombstone refuses it).
func TestWriterGiveBackOvertakenByAttempt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	p, rdb, x := overtakenClient(t, srv, 300*time.Millisecond)
	p.slow.Store(true)
	other := newClient(t, srv)
	if l, err := other.RWLock("k").TryLock(ctx); err != nil { // loads the scripts
		t.Fatal(err)
	} else {
		_ = l.Release(ctx)
	}
	if _, err := x.RWLock("k").Lock(ctx, core.Wait(100*time.Millisecond)); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Lock through the slow path: %v, want ErrUnavailable", err)
	}
	waitAnswered(t, p, rdb, x)
	l, err := other.RWLock("k").TryLock(ctx)
	if err != nil {
		t.Fatalf("x's caller returned %v and holds nothing, yet: %v", core.ErrUnavailable, err)
	}
	_ = l.Release(ctx)
}

// TestLeaveOvertakenByAttempt: a writer queued behind a reader gives up
// while its attempt is in transit; its leave goes on another connection and
// arrives first. The attempt must not put the writer's entry back after
// Lock returned, where it would refuse new readers for its lifetime.
func TestLeaveOvertakenByAttempt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	holder := newClient(t, srv)
	r, err := holder.RWLock("k").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx)
	p, rdb, x := overtakenClient(t, srv, 300*time.Millisecond)
	p.slow.Store(true)
	if _, err := x.RWLock("k").Lock(ctx, core.Wait(100*time.Millisecond)); err == nil {
		t.Fatal("a writer went in beside a reader")
	}
	waitAnswered(t, p, rdb, x)
	other := newClient(t, srv)
	l, err := other.RWLock("k").TryRLock(ctx)
	if err != nil {
		t.Fatalf("x's writer returned and x waits for nothing, yet a new reader: %v", err)
	}
	_ = l.Release(ctx)
}

// TestGrantGivenBackOvertakenByAttempt: a writer's queue is granted the
// lock at a release; the attempt that would confirm the grant is in
// transit when the caller's budget ends, and the give-back of the grant
// arrives first. The attempt must not then take the lock, free again,
// for a caller that has gone.
func TestGrantGivenBackOvertakenByAttempt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, time.Minute)
	holder := newClient(t, srv)
	r, err := holder.RWLock("k").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, rdb, x := overtakenClient(t, srv, 3*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := x.RWLock("k").Lock(ctx, core.Wait(time.Second))
		done <- err
	}()
	waitQueuedInRedis(t, ctx, srv, "lockkit:v1:rk:k", "Q")
	p.slow.Store(true) // the confirming attempt travels 3 s; the budget ends first
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, done, 30*time.Second, "the writer's Lock returned"); err == nil {
		t.Fatalf("the writer went in through a 3 s path within a 1 s budget (delayed %d, %+v)", p.delayed.Load(), x.Stats())
	}
	waitAnswered(t, p, rdb, x)
	l, err := holder.RWLock("k").TryLock(ctx)
	if err != nil {
		t.Fatalf("x's writer returned and holds nothing (%+v), yet: %v", x.Stats(), err)
	}
	_ = l.Release(ctx)
}
