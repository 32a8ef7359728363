package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The embedded server works with the engine, and its TTLs run out in real
// time (the ticker advances miniredis's clock): a holder that stopped
// renewing (NoRenew) loses the lock at its TTL and another client gets it.
func TestEmbeddedExpiresInRealTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Embedded {
		t.Fatal("not embedded")
	}
	c, err := core.New(r.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "order:1", core.TTL(time.Second), core.NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "order:1"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second acquire while held: %v", err)
	}
	l2, err := c.Acquire(ctx, "order:1", core.Wait(10*time.Second)) // woken by expiry, not by a release
	if err != nil {
		t.Fatalf("lock did not expire on the embedded server: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("tokens %d then %d", l.Token(), l2.Token())
	}
	_ = l2.Release(ctx)
}

func TestOpenURL(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "redis://"+srv.Addr()+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Embedded || !r.Client.Options().ContextTimeoutEnabled {
		t.Fatalf("embedded %v, ContextTimeoutEnabled %v", r.Embedded, r.Client.Options().ContextTimeoutEnabled)
	}
	if _, err := core.New(r.Client); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := embedded.Open(ctx, "redis://"+srv.Addr()); err == nil {
		t.Fatal("Open of a dead Redis succeeded")
	}
	if _, err := embedded.Open(ctx, "http://nope"); err == nil {
		t.Fatal("Open of a bad URL succeeded")
	}
}

// NewClient gives another client of the same server, with options of its
// own (go-redis keeps per-client state in them).
func TestNewClient(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"", "redis://" + srv.Addr() + "/0"} {
		r, err := embedded.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		c := r.NewClient()
		if c.Options() == r.Client.Options() || !c.Options().ContextTimeoutEnabled || c.Options().Addr != r.Client.Options().Addr {
			t.Errorf("%q: options shared or different: %+v", url, c.Options())
		}
		if err := c.Set(ctx, "k", url, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := r.Client.Get(ctx, "k").Result(); err != nil || v != url {
			t.Errorf("%q: the two clients see different servers: %q %v", url, v, err)
		}
		_ = c.Close()
		_ = r.Close()
	}
}
