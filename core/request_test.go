package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// NewRequest reads what options set: the settings are values, not
// closures only the engine can apply.
func TestNewRequest(t *testing.T) {
	got := core.NewRequest(core.TTL(time.Second), core.Wait(2*time.Second), core.Name("r"), core.Reentrant(), core.NoRenew(), core.MaxWaiters(3))
	want := core.Request{TTL: time.Second, Wait: 2 * time.Second, Name: "r", Reentrant: true, NoRenew: true, MaxWaiters: 3}
	if got != want {
		t.Errorf("NewRequest = %+v, want %+v", got, want)
	}
	if r := core.NewRequest(core.Wait(time.Second), core.NoWait()); r.Wait != 0 || !r.NoWait {
		t.Errorf("Wait then NoWait = %+v: the last one given counts", r)
	}
}

func TestRequestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    core.Request
		msg  string
	}{
		{"5ns TTL", core.Request{TTL: 5}, "TTL must be at least"},
		{"negative TTL", core.Request{TTL: -time.Second}, "TTL must be at least"},
		{"negative wait", core.Request{Wait: -1}, "Wait must be ≥ 0"},
		{"wait and no wait", core.Request{Wait: time.Second, NoWait: true}, "both NoWait and Wait"},
		{"negative max waiters", core.Request{MaxWaiters: -1}, "MaxWaiters"},
		{"negative limit", core.Request{Limit: -1}, "Limit must be 1 to"},
		{"limit above the maximum", core.Request{Limit: core.MaxPermits + 1}, "Limit must be 1 to"},
		{"unknown side", core.Request{Side: 7}, "unknown Side(7)"},
		{"limit and side", core.Request{Limit: 2, Side: core.ReadSide}, "alternatives"},
	} {
		if err := tc.r.Check(); !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrInvalidOption mentioning %q", tc.name, err, tc.msg)
		}
	}
	for _, r := range []core.Request{{}, {TTL: core.MinTTL}, {NoWait: true}, {Limit: core.MaxPermits}, {Side: core.WriteSide}} {
		if err := r.Check(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// AcquireRequest takes what the Request says: a mutex, a permit, a side;
// AcquireAllRequest takes mutexes only.
func TestAcquireRequestKinds(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	for _, tc := range []struct {
		r    core.Request
		kind string
		more int // further leases of the same request that fit at once
	}{
		{core.Request{}, core.KindMutex, 0},
		{core.Request{Limit: 2}, core.KindSemaphore, 1},
		{core.Request{Side: core.ReadSide}, core.KindRead, 3},
		{core.Request{Side: core.WriteSide}, core.KindWrite, 0},
	} {
		key := "req:" + tc.kind
		var leases []*core.Lease
		for range tc.more + 1 {
			l, err := c.AcquireRequest(ctx, key, tc.r)
			if err != nil {
				t.Fatalf("%s: %v", tc.kind, err)
			}
			leases = append(leases, l)
		}
		nw := tc.r
		nw.NoWait = true
		if tc.kind == core.KindRead {
			nw.Side = core.WriteSide // the readers exclude a writer
		}
		if _, err := c.AcquireRequest(ctx, key, nw); !errors.Is(err, core.ErrNotAcquired) {
			t.Errorf("%s: one more than fits = %v, want ErrNotAcquired", tc.kind, err)
		}
		for _, l := range leases {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := c.AcquireAllRequest(ctx, []string{"a", "b"}, core.Request{Name: "transfer"})
	if err != nil || len(m.Leases()) != 2 || m.Lease("a").Name() != "transfer" {
		t.Fatalf("AcquireAllRequest: %v %v", m, err)
	}
	_ = m.Release(ctx)
	if _, err := c.AcquireAllRequest(ctx, []string{"a", "b"}, core.Request{Limit: 2}); !errors.Is(err, core.ErrInvalidOption) {
		t.Errorf("AcquireAllRequest with a Limit = %v, want ErrInvalidOption", err)
	}
}

// FailOpen: the Observer hears of a run without the lock exactly when
// Redis did not answer, never for a lock seen held.
func TestAcquireRequestFailOpen(t *testing.T) {
	srv := redistest.Start(t)
	obs := &unlockedObserver{}
	c := testkit.Client(t, srv.NewClient(), core.WithObserver(obs))
	ctx := testkit.Context(t, 30*time.Second)
	r := core.Request{FailOpen: true, NoWait: true, Name: "route"}
	l, err := c.AcquireRequest(ctx, "fo", r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireRequest(ctx, "fo", r); !errors.Is(err, core.ErrNotAcquired) || r.FailsOpen(ctx, err) || obs.n() != 0 {
		t.Fatalf("held: %v, fails open %v, Unlocked told %d times", err, r.FailsOpen(ctx, err), obs.n())
	}
	_ = l.Release(ctx)
	srv.Kill()
	_, err = c.AcquireRequest(ctx, "fo", r)
	if !r.FailsOpen(ctx, err) || obs.n() != 1 || obs.last.Name != "route" || obs.last.Key != "fo" {
		t.Fatalf("Redis down: %v, fails open %v, Unlocked told %d times (%+v)", err, r.FailsOpen(ctx, err), obs.n(), obs.last)
	}
	if _, err := c.AcquireRequest(ctx, "fo", core.Request{NoWait: true}); err == nil || obs.n() != 1 {
		t.Fatalf("fail-closed with Redis down: %v; Unlocked told %d times, want 1", err, obs.n())
	}
}

type unlockedObserver struct {
	core.NopObserver
	count int
	last  core.AcquireInfo
}

func (o *unlockedObserver) Unlocked(_ context.Context, a core.AcquireInfo, _ error) {
	o.count++
	o.last = a
}

func (o *unlockedObserver) n() int { return o.count }

// waitObserver records the wait budget every acquire starts with.
type waitObserver struct {
	core.NopObserver
	waits chan time.Duration
}

func (o waitObserver) AcquireStart(ctx context.Context, a core.AcquireInfo) context.Context {
	o.waits <- a.Wait
	return ctx
}

// Without Wait, an acquire waits core.DefaultWait, the default of every
// adapter too (it waited until ctx ended, so a background job on
// context.Background() could wait for ever); Wait(0) is the default.
func TestDefaultWait(t *testing.T) {
	obs := waitObserver{waits: make(chan time.Duration, 8)}
	c := testkit.Client(t, redistest.Start(t).NewClient(), core.WithObserver(obs))
	ctx := testkit.Context(t, 30*time.Second)
	for _, tc := range []struct {
		opts []core.AcquireOption
		want time.Duration
	}{
		{nil, core.DefaultWait},
		{[]core.AcquireOption{core.Wait(0)}, core.DefaultWait},
		{[]core.AcquireOption{core.Wait(time.Second)}, time.Second},
	} {
		l, err := c.Acquire(ctx, "dw", tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
		if got := testkit.Recv(t, obs.waits, 10*time.Second, "the acquire's start"); got != tc.want {
			t.Errorf("%d options: wait budget %v, want %v", len(tc.opts), got, tc.want)
		}
	}
}
