package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Each way of losing a held lock ends the lease: Context done with cause
// ErrLost, Err ErrLost, Release ErrNotHeld; another client then acquires
// with a larger token.
func TestLostLease(t *testing.T) {
	cases := []struct {
		name  string
		fault func(t *testing.T, srv *redistest.Server, key string)
		heal  func(srv *redistest.Server)
	}{
		{"key deleted", func(t *testing.T, srv *redistest.Server, key string) {
			if n, err := srv.Client.Del(context.Background(), key).Result(); err != nil || n != 1 {
				t.Fatalf("DEL = %d %v", n, err)
			}
		}, nil},
		{"FLUSHALL", func(t *testing.T, srv *redistest.Server, _ string) {
			if err := srv.Client.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"restart empty", func(t *testing.T, srv *redistest.Server, _ string) { srv.Restart(false) }, nil},
		{"SIGSTOP past the TTL", func(t *testing.T, srv *redistest.Server, _ string) { srv.Pause() },
			func(srv *redistest.Server) { srv.Resume() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := newRecorder()
			c := newClient(t, srv, core.WithTTL(time.Second), core.WithObserver(rec))
			ctx := testkit.Context(t, 20*time.Second)
			l, err := c.Acquire(ctx, "lost:1")
			if err != nil {
				t.Fatal(err)
			}
			tc.fault(t, srv, "lockkit:v1:k:lost:1")
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("lease context not cancelled after the lock was lost")
			}
			if cause := context.Cause(l.Context()); !errors.Is(cause, core.ErrLost) {
				t.Fatalf("cause = %v, want ErrLost", cause)
			}
			if !errors.Is(l.Err(), core.ErrLost) {
				t.Fatalf("Err = %v", l.Err())
			}
			if tc.heal != nil {
				tc.heal(srv)
			}
			if err := l.Release(ctx); !errors.Is(err, core.ErrNotHeld) || !errors.Is(err, core.ErrLost) {
				t.Fatalf("Release after loss = %v, want ErrNotHeld and ErrLost", err)
			}
			other := newClient(t, srv)
			l2, err := other.Acquire(ctx, "lost:1", core.Wait(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if l2.Token() <= l.Token() {
				t.Fatalf("new token %d not above lost token %d", l2.Token(), l.Token())
			}
			_ = l2.Release(ctx)
			// The Observer hears of the loss just after the context ends.
			testkit.WaitFor(t, 5*time.Second, "the Observer's Lost", func() bool { _, _, _, lost := rec.snapshot(); return lost >= 1 })
			if _, _, _, lost := rec.snapshot(); lost != 1 {
				t.Fatalf("observer saw %d losses", lost)
			}
		})
	}
}

// The local deadline is counted from when a request was sent, the server's
// expiry from when it arrived, so the deadline is before the expiry however
// slow the reply. A proxy delays every reply by 300 ms (ten times the
// drift allowance of a 3 s TTL): a deadline counted from the reply would
// fall after the server's expiry. Checked for the acquire and for a
// renewal; then the lease, left without renewals (NoRenew for the first
// part), ends at its deadline.
func TestDeadlineCountsFromSendTime(t *testing.T) {
	srv := redistest.Start(t)
	p, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.SetLatency(tcpproxy.Downstream, 300*time.Millisecond)
	slow := srv.NewClient(func(o *redis.Options) { o.Addr = p.Addr() })
	c := newClientOn(t, slow)
	ctx := testkit.Context(t, 30*time.Second)
	serverExpiry := func(key string) time.Time {
		t.Helper()
		at, err := srv.Client.PExpireTime(ctx, "lockkit:v1:k:"+key).Result()
		if err != nil || at <= 0 {
			t.Fatalf("PEXPIRETIME %s = %v, %v", key, at, err)
		}
		return time.UnixMilli(at.Milliseconds())
	}

	l, err := c.Acquire(ctx, "deadline:acquire", core.TTL(3*time.Second), core.NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	if exp := serverExpiry("deadline:acquire"); !l.Until().Before(exp) {
		t.Fatalf("after the acquire: local deadline %v not before the server expiry %v", l.Until(), exp)
	}
	testkit.Recv(t, l.Done(), 10*time.Second, "the lease's end at its deadline")
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}

	r, err := c.Acquire(ctx, "deadline:renew", core.TTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx)
	first := r.Until()
	testkit.WaitFor(t, 10*time.Second, "a confirmed renewal", func() bool { return r.Until().After(first) })
	// The next renewal is a second away: the expiry read now is this renewal's.
	if exp := serverExpiry("deadline:renew"); !r.Until().Before(exp) {
		t.Fatalf("after a renewal: local deadline %v not before the server expiry %v", r.Until(), exp)
	}
}
