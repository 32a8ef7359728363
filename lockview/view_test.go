package lockview_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
)

// TestJSONDuringContendedRun reads the JSON while requests contend: the
// lock this process holds with its waiters, the hot keys with their wait
// percentiles, then a lease lost to a force release and an acquire failed
// by a dead Redis.
func TestJSONDuringContendedRun(t *testing.T) {
	r := newRig(t, lockview.WithKeys(lockview.KeyRaw))
	ctx := testkit.Context(t, 60*time.Second)
	stop := load(t, r.c, []string{"hot:a", "hot:b"}, 3, 10*time.Millisecond)

	// A lease this process holds, with two of its callers queued behind it.
	pinned, err := r.c.Acquire(ctx, "pinned", core.Name("POST /pinned"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancelWaiters := context.WithCancel(ctx)
	waited := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := r.c.Acquire(wctx, "pinned")
			waited <- err
		}()
	}

	var s lockview.Snapshot
	testkit.WaitFor(t, 30*time.Second, "hot keys and the pinned lock's waiters in the JSON", func() bool {
		s = r.snapshot(t)
		a, okA := hotKey(s, "hot:a")
		b, okB := hotKey(s, "hot:b")
		p, okP := lockRow(s, "pinned")
		return okA && okB && a.Acquired >= 20 && b.Acquired >= 20 && a.WaitP99 > 0 && okP && p.Waiters == 2
	})
	if s.Owner != "replica-1" || s.KeyMode != "raw" || s.WindowSeconds != 60 {
		t.Errorf("header: owner %q mode %q window %v", s.Owner, s.KeyMode, s.WindowSeconds)
	}
	p, _ := lockRow(s, "pinned")
	switch {
	case !p.Held || p.Owner != "replica-1" || p.Token != pinned.Token() || p.Name != "POST /pinned":
		t.Errorf("pinned = %+v, want held by replica-1 with token %d", p, pinned.Token())
	case p.TTLLeft <= 0 || p.TTLLeft > p.TTL || p.TTL != 30000:
		t.Errorf("pinned TTL left %v of %v ms, want within (0, 30000]", p.TTLLeft, p.TTL)
	case p.HeldFor <= 0 || p.AcquiredAt == nil:
		t.Errorf("pinned held for %v ms since %v", p.HeldFor, p.AcquiredAt)
	case p.OldestWaitSince == nil || p.OldestWait <= 0 || p.OldestWait > p.HeldFor:
		t.Errorf("pinned oldest wait %v ms (since %v), held for %v ms: the waiters queued after it was taken", p.OldestWait, p.OldestWaitSince, p.HeldFor)
	}
	for _, key := range []string{"hot:a", "hot:b"} {
		h, _ := hotKey(s, key)
		if !slices.Equal(h.Names, []string{"PUT /orders/:id"}) || !h.Contended || h.Acquires < h.Acquired || !(0 < h.WaitP50 && h.WaitP50 <= h.WaitP99 && h.WaitP99 <= h.WaitMax && h.WaitMax <= h.WaitTotal) {
			t.Errorf("%s = %+v: want its one name, contended, and 0 < p50 <= p99 <= max <= total", key, h)
		}
		// Three workers hand the key round: each waits for the others' holds.
		if h.WaitP99 < 10 {
			t.Errorf("%s: p99 %v ms, want at least one hold of 10ms", key, h.WaitP99)
		}
		// One Client's workers queue behind each other (its hand-offs need
		// no Redis attempt): the holder is met through the local queue.
		if h.LastHolder == nil || h.LastHolder.Owner != "replica-1" || h.LastHolder.Token <= 0 {
			t.Errorf("%s: last holder %+v: want replica-1 met", key, h.LastHolder)
		}
	}
	if !slices.IsSortedFunc(s.HotKeys, func(a, b lockview.HotKey) int {
		switch {
		case a.WaitTotal > b.WaitTotal:
			return -1
		case a.WaitTotal < b.WaitTotal:
			return 1
		}
		return 0
	}) {
		t.Errorf("hot keys not hottest first: %+v", s.HotKeys)
	}

	stop()
	cancelWaiters()
	for range 2 {
		if err := testkit.Recv(t, waited, 10*time.Second, "a pinned waiter's end"); !errors.Is(err, context.Canceled) {
			t.Errorf("pinned waiter: %v, want context.Canceled", err)
		}
	}
	if err := pinned.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A lease lost: an operator force-releases it, its next renewal finds
	// the lock gone.
	lost, err := r.c.Acquire(ctx, "lose:me", core.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	admin := testkit.Client(t, r.srv.NewClient())
	if ok, err := admin.ForceRelease(ctx, "lose:me"); err != nil || !ok {
		t.Fatalf("ForceRelease: %v %v", ok, err)
	}
	testkit.Recv(t, lost.Done(), 10*time.Second, "the lease's loss")
	// The lease's context ends just before the Observer is told: wait for
	// the view to have it.
	testkit.WaitFor(t, 10*time.Second, "the loss in the view", func() bool { return r.snapshot(t).LossesTotal > 0 })
	s = r.snapshot(t)
	if len(s.Losses) != 1 || s.LossesTotal != 1 {
		t.Fatalf("losses %+v (total %d), want the one", s.Losses, s.LossesTotal)
	}
	if l := s.Losses[0]; l.Key != "lose:me" || l.Token != lost.Token() || !strings.Contains(l.Cause, "lost") || l.HeldFor <= 0 {
		t.Errorf("loss = %+v, want lose:me token %d", l, lost.Token())
	}
	if len(s.Errors) != 0 {
		t.Errorf("errors before Redis died: %+v", s.Errors)
	}

	// Redis dies: the next acquire fails, and the error is listed.
	r.srv.Kill()
	_, err = r.c.Acquire(ctx, "down:x", core.Wait(2*time.Second))
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("acquire with Redis dead: %v, want ErrUnavailable", err)
	}
	s = r.snapshot(t)
	if len(s.Errors) == 0 {
		t.Fatal("no error listed after Redis died")
	}
	if e := s.Errors[0]; e.Op != "acquire" || e.Key != "down:x" || !strings.Contains(e.Error, "down:x") || e.Time.IsZero() {
		t.Errorf("error = %+v, want the acquire of down:x", e)
	}
	// The index sums the same: the one loss, and the errors.
	_, body := r.get(t, http.MethodGet, "/debug/?format=json")
	var ix lockview.Index
	if err := json.Unmarshal([]byte(body), &ix); err != nil || len(ix.Views) != 1 ||
		ix.Views[0].LossesTotal != 1 || ix.Views[0].ErrorsTotal != s.ErrorsTotal {
		t.Errorf("index %s (%v): want losses 1, errors %d", body, err, s.ErrorsTotal)
	}
}
