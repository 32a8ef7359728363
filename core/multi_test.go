package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// TestAcquireAllOppositeOrdersNoDeadlock: workers of two Clients ask for
// the same three keys, half in one order and half in the reverse, with a
// critical section on all three; every round ends (no deadlock), no two
// holders of one key overlap (a counter per key), and each key's tokens
// increase in the order its holders entered.
func TestAcquireAllOppositeOrdersNoDeadlock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	clients := []*core.Client{newClient(t, srv), newClient(t, srv)}
	keys := []string{"acct:a", "acct:b", "acct:c"}
	var inside [3]atomic.Int32
	var mu sync.Mutex
	last := map[string]int64{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := keys
			if w%2 == 1 {
				order = []string{keys[2], keys[1], keys[0]}
			}
			c := clients[w%2]
			for range 15 {
				m, err := c.AcquireAll(ctx, order, core.TTL(5*time.Second))
				if err != nil {
					errs <- err
					return
				}
				for i := range inside {
					if inside[i].Add(1) != 1 {
						errs <- fmt.Errorf("two holders of %s", keys[i])
					}
				}
				mu.Lock()
				for _, l := range m.Leases() {
					if l.Token() <= last[l.Key()] {
						errs <- fmt.Errorf("%s: token %d after %d", l.Key(), l.Token(), last[l.Key()])
					}
					last[l.Key()] = l.Token()
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // the work on all three
				for i := range inside {
					inside[i].Add(-1)
				}
				if err := m.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestAcquireAllOneRoundTrip: three free keys on one server are taken by
// one script call (Redis's own count of EVALSHA), whatever order they are
// given in, each with its own lease, fencing token and renewal.
func TestAcquireAllOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	rec := &kindRecorder{}
	c := newClient(t, srv, core.WithObserver(rec))
	warm, err := c.AcquireAll(ctx, []string{"w1", "w2"}) // loads the script
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(ctx)
	before := evalCalls(t, srv)
	m, err := c.AcquireAll(ctx, []string{"t:c", "t:a", "t:b", "t:a"}, core.TTL(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if got := evalCalls(t, srv) - before; got != 1 {
		t.Errorf("%d script calls to take 3 keys, want 1", got)
	}
	if k := m.Keys(); strings.Join(k, ",") != "t:a,t:b,t:c" {
		t.Errorf("keys %v, want the canonical order without duplicates", k)
	}
	for _, l := range m.Leases() {
		if h, held, err := c.Inspect(ctx, l.Key()); err != nil || !held || h.Token != l.Token() {
			t.Errorf("%s: %+v %v %v", l.Key(), h, held, err)
		}
	}
	time.Sleep(time.Second) // longer than the TTL: renewal keeps all three
	if err := m.Err(); err != nil {
		t.Fatalf("lost while renewed: %v", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"t:a", "t:b", "t:c"} {
		if _, held, _ := c.Inspect(ctx, k); held {
			t.Errorf("%s still held after Release", k)
		}
	}
	if err := m.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("second Release: %v", err)
	}
}

func evalCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
			var calls int
			fmt.Sscanf(line[strings.Index(line, "calls=")+len("calls="):], "%d", &calls)
			n += calls
		}
	}
	return n
}

// TestAcquireAllRollback: a key held by another Client makes AcquireAll
// wait for it (in the canonical order) and, when the budget ends, give back
// every key it took: none of ours is left, and the error names the holder.
func TestAcquireAllRollback(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	other := newClient(t, srv, core.WithOwner("other"))
	c := newClient(t, srv)
	held, err := other.Acquire(ctx, "r:b")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AcquireAll(ctx, []string{"r:c", "r:b", "r:a"}, core.Wait(300*time.Millisecond))
	var na *core.NotAcquiredError
	if !errors.As(err, &na) || na.Key != "r:b" || na.Holder.Owner != "other" || core.Classify(ctx, err) != core.OutcomeTimeout {
		t.Fatalf("AcquireAll past a held key: %v", err)
	}
	for _, k := range []string{"r:a", "r:c"} {
		testkit.WaitFor(t, 5*time.Second, k+" given back", func() bool {
			_, h, _ := c.Inspect(ctx, k)
			return !h
		})
	}
	// NoWait: one attempt per key, the same rollback.
	if _, err := c.AcquireAll(ctx, []string{"r:a", "r:b"}, core.NoWait()); core.Classify(ctx, err) != core.OutcomeContended {
		t.Fatalf("NoWait: %v", err)
	}
	if _, h, _ := c.Inspect(ctx, "r:a"); h {
		t.Error("r:a kept after a NoWait failure")
	}
	// Once the holder releases, a waiting AcquireAll gets all of them.
	done := make(chan error, 1)
	go func() {
		m, err := c.AcquireAll(ctx, []string{"r:b", "r:a"}, core.Wait(10*time.Second))
		if err == nil {
			err = m.Release(ctx)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it queue: either way it must end acquired
	_ = held.Release(ctx)
	if err := testkit.Recv(t, done, 10*time.Second, "AcquireAll after the release"); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireAllLosingOneEndsAll: when one key is lost (removed on the
// server, found by renewal), the MultiLease's Context ends with ErrLost
// while the other keys are still held; Release frees them and reports the
// lost one.
func TestAcquireAllLosingOneEndsAll(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 20*time.Second)
	c := newClient(t, srv)
	m, err := c.AcquireAll(ctx, []string{"l:a", "l:b"}, core.TTL(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForceRelease(ctx, "l:b"); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, m.Done(), 10*time.Second, "the multi-lease's end")
	if !errors.Is(context.Cause(m.Context()), core.ErrLost) || !errors.Is(m.Err(), core.ErrLost) {
		t.Fatalf("cause %v, Err %v", context.Cause(m.Context()), m.Err())
	}
	if m.Lease("l:a").Err() != nil {
		t.Fatal("the other key should still be held until Release")
	}
	if err := m.Release(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Release: %v", err)
	}
	if _, h, _ := c.Inspect(ctx, "l:a"); h {
		t.Error("l:a still held after Release")
	}
}

// TestAcquireAllScriptIdempotent: a re-sent acquireall (same tokens) does
// not change the fences; with a key taken meanwhile by another token it
// changes nothing.
func TestAcquireAllScriptIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 10*time.Second)
	rdb := srv.Client
	keys := []string{"lockkit:v1:k:i:a", "lockkit:v1:k:i:b"}
	args := []any{30000, "me", "tok-a", "", "tok-b", ""}
	first, err := core.RunAcquireAll(ctx, rdb, keys, args...)
	if err != nil {
		t.Fatal(err)
	}
	again, err := core.RunAcquireAll(ctx, rdb, keys, args...)
	if err != nil || fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("re-sent: %v then %v (%v)", first, again, err)
	}
	if err := rdb.HSet(ctx, "lockkit:v1:k:i:c", "o", "someone").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := core.RunAcquireAll(ctx, rdb, append(keys, "lockkit:v1:k:i:c"), append(args, "tok-c", "")...)
	if err != nil || len(res) < 2 || fmt.Sprint(res[0]) != "0" || fmt.Sprint(res[1]) != "3" {
		t.Fatalf("with the third held: %v %v", res, err)
	}
	if o, _ := rdb.HGet(ctx, "lockkit:v1:k:i:c", "o").Result(); o != "someone" {
		t.Fatal("the held key changed")
	}
}

func TestAcquireAllBadInput(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 10*time.Second)
	c := newClient(t, srv)
	for _, keys := range [][]string{nil, {}, {"a", ""}, {"a", strings.Repeat("k", core.MaxKeyLen+1)}, make([]string, core.MaxKeysPerAcquire+1)} {
		if _, err := c.AcquireAll(ctx, keys); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("%d keys: %v", len(keys), err)
		}
	}
	if keys, _ := srv.Client.Keys(ctx, "lockkit:*").Result(); len(keys) != 0 {
		t.Errorf("bad input reached Redis: %v", keys)
	}
	// DoAll: fn runs under both, its context ends with the release.
	var ran bool
	err := c.DoAll(ctx, []string{"d:1", "d:2"}, func(ctx context.Context) error {
		l, ok := core.LeaseFromContext(ctx)
		m, mok := core.MultiLeaseFromContext(ctx)
		ran = ok && l.Key() == "d:2" && mok && m.Lease("d:1") != nil && m.Lease("d:1").Token() > 0
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("DoAll: %v (ran %v)", err, ran)
	}
}

// testClusterMulti: on a cluster, keys with one hash tag share a slot and
// take one round trip (one EVALSHA on their master); keys across slots are
// taken one at a time in the canonical order, and a failure rolls back the
// ones taken.
func testClusterMulti(t *testing.T, cl *redistest.Cluster) {
	ctx := testkit.Context(t, 30*time.Second)
	c := testkit.Client(t, cl.NewClient())
	same := []string{"{acct}:1", "{acct}:2", "{acct}:3"}
	master := cl.Master(core.KeySlot(hashKey(same[0])))
	warm, err := c.AcquireAll(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(ctx)
	before := evalCalls(t, master)
	m, err := c.AcquireAll(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	if got := evalCalls(t, master) - before; got != 1 {
		t.Errorf("%d script calls on the slot's master for 3 keys of one slot, want 1", got)
	}
	_ = m.Release(ctx)

	// Across slots: one key per master.
	var across []string
	seen := map[*redistest.Server]bool{}
	for i := 0; len(across) < 3; i++ {
		k := fmt.Sprintf("x%d", i)
		if s := cl.Master(core.KeySlot(hashKey(k))); !seen[s] {
			seen[s] = true
			across = append(across, k)
		}
	}
	m, err = c.AcquireAll(ctx, across)
	if err != nil {
		t.Fatalf("across slots: %v", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other := testkit.Client(t, cl.NewClient(func(o *redis.ClusterOptions) {}), core.WithOwner("other"))
	keys := m.Keys() // canonical order
	held, err := other.Acquire(ctx, keys[len(keys)-1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireAll(ctx, across, core.Wait(200*time.Millisecond)); core.Classify(ctx, err) != core.OutcomeTimeout {
		t.Fatalf("across slots with the last held: %v", err)
	}
	for _, k := range keys[:len(keys)-1] {
		testkit.WaitFor(t, 5*time.Second, k+" rolled back", func() bool {
			_, h, _ := c.Inspect(ctx, k)
			return !h
		})
	}
	_ = held.Release(ctx)
}
