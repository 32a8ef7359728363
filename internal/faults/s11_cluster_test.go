package faults_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 11: a 3-master Redis Cluster (real redis-server processes joined
// with redis-cli --cluster create) behind redis.NewClusterClient.
//
//   - across slots: one client holds 12 locks spread over every master,
//     renews them (its renewal pipeline is split per node), and another
//     client waits for all 12 and is woken by release notifications (well
//     before its fallback timer: the holder's TTL); believed holds never
//     overlap;
//   - braces: keys that contain hash tags ({user1}:a, {user1}:b) or stray
//     braces (a{, }b) are each one lock, one Redis key: holding all four
//     makes exactly four owned hashes, and each refuses another client.
func TestS11Cluster(t *testing.T) {
	const ttl = 3 * time.Second
	cl := faults.StartCluster(t, 3)
	ctx := testkit.Context(t, 90*time.Second)
	obsA, obsB := newObserver(), newObserver()
	a := newClient(t, cl.NewClient(), core.WithTTL(ttl), core.WithObserver(obsA), core.WithOwner("a"))
	b := newClient(t, cl.NewClient(), core.WithTTL(ttl), core.WithObserver(obsB), core.WithOwner("b"))
	admin := cl.NewClient()

	t.Run("across slots", func(t *testing.T) {
		hist, res := faults.NewHistory(), faults.NewResource()
		var keys []string
		masters := map[string]bool{}
		for i := range 12 {
			k := fmt.Sprint("order:", i)
			keys = append(keys, k)
			masters[masterOf(t, admin, lockKey(k))] = true
		}
		if len(masters) != 3 {
			t.Fatalf("12 keys landed on %d masters; pick other keys", len(masters))
		}
		var leases []*core.Lease
		var holds []*faults.Hold
		var firstUntil []time.Time
		for _, k := range keys {
			l, err := a.Acquire(ctx, k)
			if err != nil {
				t.Fatalf("acquire %s: %v", k, err)
			}
			leases = append(leases, l)
			holds = append(holds, hist.Begin("a", l))
			firstUntil = append(firstUntil, l.Until())
		}
		live := faults.NewLiveness(keys...)
		var wg sync.WaitGroup
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := b.Acquire(ctx, k, core.Wait(30*time.Second))
				if err != nil {
					live.Failed(k, err)
					return
				}
				live.Acquired(k)
				hd := hist.Begin("b", l)
				if err := res.Increment(k, l.Token(), 0); err != nil {
					t.Errorf("write %s: %v", k, err)
				}
				hd.Released()
				if err := l.Release(ctx); err != nil {
					t.Errorf("release %s: %v", k, err)
				}
			}()
		}
		// Every waiter refused twice (the second after its subscription was
		// confirmed), and every lease renewed at least once.
		testkit.WaitFor(t, 20*time.Second, "12 waiters subscribed", func() bool { return obsB.counts().contended >= 2*len(keys) })
		testkit.WaitFor(t, 20*time.Second, "each of the 12 leases renewed", func() bool {
			for i, l := range leases {
				if !l.Until().After(firstUntil[i]) {
					return false
				}
			}
			return true
		})
		for i, l := range leases {
			if err := res.Increment(keys[i], l.Token(), 0); err != nil {
				t.Errorf("holder write: %v", err)
			}
			holds[i].Released()
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release %s: %v", l.Key(), err)
			}
		}
		live.Healed()
		wg.Wait()
		// The fallback timer would fire ~TTL (3s) after the last refusal:
		// acquiring within 1.5s of the releases is the notification's doing.
		if err := live.Check(1500 * time.Millisecond); err != nil {
			t.Error(err)
		}
		if c := obsA.counts(); c.lost != 0 || c.renewErrs != 0 {
			t.Errorf("holder observer %+v", c)
		}
		verdict(t, hist, res, false)
		noLeftovers(t, 5*time.Second, admin)
		t.Logf("12 locks on 3 masters: %d renewals; waiters acquired within %v of the releases; %d refused attempts",
			obsA.counts().renewed, live.Latest().Round(time.Millisecond), obsB.counts().contended)
	})

	t.Run("braces", func(t *testing.T) {
		keys := []string{"{user1}:a", "{user1}:b", "a{", "}b"}
		if masterOf(t, admin, lockKey(keys[0])) != masterOf(t, admin, lockKey(keys[1])) {
			t.Fatal("the two {user1} keys are not in one slot: the hash tag was not honoured")
		}
		var leases []*core.Lease
		for _, k := range keys {
			l, err := a.Acquire(ctx, k, core.NoWait())
			if err != nil {
				t.Fatalf("acquire %q while holding the others: %v", k, err)
			}
			leases = append(leases, l)
		}
		lo, err := faults.LeftLocks(ctx, admin, "lockkit:")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, k := range keys {
			want[lockKey(k)] = true
		}
		if len(lo) != len(keys) {
			t.Fatalf("holding %d locks made %d owned hashes: %s", len(keys), len(lo), faults.FormatLeftovers(lo))
		}
		for _, x := range lo {
			if !want[x.Key] || x.Reason != "owned" {
				t.Fatalf("unexpected lock key %s", x)
			}
		}
		for _, k := range keys {
			if _, err := b.TryAcquire(ctx, k); !errors.Is(err, core.ErrNotAcquired) {
				t.Errorf("another client on held %q = %v", k, err)
			}
		}
		for _, l := range leases {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			l, err := b.TryAcquire(ctx, k)
			if err != nil {
				t.Fatalf("after release %q: %v", k, err)
			}
			_ = l.Release(ctx)
		}
		noLeftovers(t, 5*time.Second, admin)
	})
}

// masterOf returns the address of the master serving key's slot.
func masterOf(t *testing.T, cc *redis.ClusterClient, key string) string {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Second)
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	t.Fatalf("no master for slot %d", slot)
	return ""
}
