package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
			if _, _, _, lost := rec.snapshot(); lost != 1 {
				t.Fatalf("observer saw %d losses", lost)
			}
		})
	}
}

// The lease ends at its local deadline, before the key can expire on the
// server: the deadline counts from when the acquire was sent, the server's
// expiry from when it arrived, minus a drift allowance. (NoRenew keeps the
// server's expiry fixed so it can be read once; renewal uses the same rule.)
func TestLossSignalledBeforeServerExpiry(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := testkit.Context(t, 20*time.Second)
	l, err := c.Acquire(ctx, "lost:2", core.TTL(1500*time.Millisecond), core.NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	expireAt, err := srv.Client.PExpireTime(ctx, "lockkit:v1:k:lost:2").Result()
	if err != nil {
		t.Fatal(err)
	}
	serverExpiry := time.UnixMilli(expireAt.Milliseconds())
	if !l.Until().Before(serverExpiry) {
		t.Fatalf("local deadline %v not before the server expiry %v", l.Until(), serverExpiry)
	}
	<-l.Done()
	lostAt := time.Now()
	if !errors.Is(context.Cause(l.Context()), core.ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
	if !lostAt.Before(serverExpiry) {
		t.Fatalf("lease ended at %v, not before the server expiry %v", lostAt.Format(time.StampMicro), serverExpiry.Format(time.StampMicro))
	}
}
