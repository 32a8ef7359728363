package core_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// TestCluster runs the Redis Cluster tests on one 3-master cluster with a
// replica each, started once (starting one costs seconds). The subtests
// run in order and leave the cluster healthy; the ones that move slots or
// fail a master over come last and find the keys' masters afresh.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	t.Run("KeySlot", func(t *testing.T) { testClusterKeySlot(t, cl) })
	t.Run("ShardedDelivery", func(t *testing.T) { testClusterShardedDelivery(t, cl) })
	t.Run("WakeEveryShard", func(t *testing.T) { testClusterWakeEveryShard(t, cl) })
	t.Run("PubSubKill", func(t *testing.T) { testClusterPubSubKill(t, cl) })
	t.Run("RollingDeploy", func(t *testing.T) { testClusterRollingDeploy(t, cl) })
	t.Run("Shared", func(t *testing.T) { testClusterShared(t, cl) })
	t.Run("Multi", func(t *testing.T) { testClusterMulti(t, cl) })
	t.Run("Claim", func(t *testing.T) { testClusterClaim(t, cl) })
	t.Run("Resharding", func(t *testing.T) {
		testClusterTopologyChange(t, cl, func(slot int) {
			from := cl.Master(slot)
			for _, m := range cl.Masters() {
				if m != from {
					cl.MoveSlot(slot, m)
					return
				}
			}
		})
	})
	t.Run("Failover", func(t *testing.T) {
		testClusterTopologyChange(t, cl, func(slot int) {
			reps := cl.ReplicaOf(cl.Master(slot))
			if len(reps) == 0 {
				t.Fatal("the slot's master has no replica")
			}
			cl.Failover(reps[0])
		})
	})
}

// hashKey is the lock hash of a key with the default prefix.
func hashKey(key string) string { return core.DefaultPrefix + ":" + core.LayoutVersion + ":k:" + key }

// keysByMaster picks, for every master, a plain key and a key with braces
// (its slot chosen by the tag alone) whose lock hashes it serves.
func keysByMaster(t *testing.T, cl *redistest.Cluster, tag string) map[*redistest.Server][]string {
	t.Helper()
	masters := cl.Masters()
	out := map[*redistest.Server][]string{}
	plain, braced := map[*redistest.Server]bool{}, map[*redistest.Server]bool{}
	for i := 0; len(plain) < len(masters) || len(braced) < len(masters); i++ {
		if i > 10000 {
			t.Fatal("no keys found for every master")
		}
		for _, k := range []string{fmt.Sprintf("%s:%d", tag, i), fmt.Sprintf("{%s-%d}:x", tag, i)} {
			m := cl.Master(core.KeySlot(hashKey(k)))
			seen := plain
			if strings.HasPrefix(k, "{") {
				seen = braced
			}
			if !seen[m] {
				seen[m] = true
				out[m] = append(out[m], k)
			}
		}
	}
	return out
}

// The slot the engine computes for a channel is the server's.
func testClusterKeySlot(t *testing.T, cl *redistest.Cluster) {
	for _, k := range []string{"a", "job:1", "{user:7}:cart", "x{}y", "{}z", "a{b", "a}b{c}", "{{x}}", hashKey("{t}:1")} {
		if got, want := core.KeySlot(k), cl.Slot(k); got != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// nodeStats reads one node's publish counters: commandstats calls and the
// cluster bus messages received (CLUSTER INFO omits a type never seen).
func nodeStats(t *testing.T, s *redistest.Server) map[string]int64 {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Second)
	out := map[string]int64{}
	calls := cmdCalls(t, s)
	for _, name := range []string{"publish", "spublish"} {
		out["cmdstat_"+name] = calls[name]
	}
	info, err := s.Client.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok && (name == "cluster_stats_messages_publish_received" || name == "cluster_stats_messages_publishshard_received") {
			out[name], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}

func allStats(t *testing.T, cl *redistest.Cluster) map[*redistest.Server]map[string]int64 {
	out := map[*redistest.Server]map[string]int64{}
	for _, s := range cl.Running() {
		out[s] = nodeStats(t, s)
	}
	return out
}

// releases runs n acquire/release cycles of key on c.
// releases runs n rounds on key: c acquires, a waiter of w (another
// Client, standing for another process) is refused twice, the second time
// queued in Redis behind it, c releases, handing the lock to the waiter, which releases it
// with nobody waiting. Each round is one announced release: release.lua
// publishes only when someone waits.
func releases(t *testing.T, c, w *core.Client, key string, n int) {
	t.Helper()
	ctx := testkit.Context(t, 20*time.Second)
	for range n {
		l, err := c.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		refused := make(chan struct{}, 2)
		done := make(chan error, 1)
		go func() {
			wl, err := w.Acquire(context.WithValue(ctx, signalKey{}, refused), key)
			if err == nil {
				err = wl.Release(ctx)
			}
			done <- err
		}()
		for range 2 { // the second refusal follows its subscription: it is queued
			select {
			case <-refused:
			case err := <-done:
				t.Fatalf("the waiter was not refused twice: %v", err)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A release on a cluster client is one SPUBLISH on the lock's master,
// delivered over the cluster bus to that shard's replica only; the classic
// PUBLISH of the old layout is broadcast to every other node.
func testClusterShardedDelivery(t *testing.T, cl *redistest.Cluster) {
	const n = 20
	keys := keysByMaster(t, cl, "stats")
	var master *redistest.Server
	for m := range keys {
		master = m
		break
	}
	key := keys[master][0]
	replica := cl.ReplicaOf(master)[0]

	// measure runs the releases on c and returns every node's counters'
	// increase, once the nodes of reach got the n messages over the bus
	// (asynchronously): then every node that was going to get one has it.
	measure := func(counter string, reach []*redistest.Server, opts ...core.Option) map[*redistest.Server]map[string]int64 {
		c := testkit.Client(t, cl.NewClient(), opts...)
		w := testkit.Client(t, cl.NewClient(), append(opts, core.WithObserver(signaller{}))...)
		before := allStats(t, cl)
		releases(t, c, w, key, n)
		for _, s := range reach {
			testkit.WaitFor(t, 10*time.Second, s.Addr()+"'s "+counter, func() bool {
				return nodeStats(t, s)[counter]-before[s][counter] >= n
			})
		}
		after := allStats(t, cl)
		d := map[*redistest.Server]map[string]int64{}
		for s, a := range after {
			d[s] = map[string]int64{}
			for k, v := range a {
				d[s][k] = v - before[s][k]
			}
		}
		return d
	}

	sharded := measure("cluster_stats_messages_publishshard_received", []*redistest.Server{replica})
	for s, d := range sharded {
		wantSpub, wantRecv := int64(0), int64(0)
		switch s {
		case master:
			wantSpub = n
		case replica:
			wantRecv = n
		}
		if d["cmdstat_spublish"] != wantSpub || d["cmdstat_publish"] != 0 ||
			d["cluster_stats_messages_publishshard_received"] != wantRecv || d["cluster_stats_messages_publish_received"] != 0 {
			t.Errorf("sharded, node %s (%s): %v; want %d spublish, %d publishshard received, no publish", s.Addr(), cl.Role(s), d, wantSpub, wantRecv)
		}
		t.Logf("sharded, %d releases, node %s (%s): %v", n, s.Addr(), cl.Role(s), d)
	}

	var others []*redistest.Server
	for _, s := range cl.Running() {
		if s != master {
			others = append(others, s)
		}
	}
	classic := measure("cluster_stats_messages_publish_received", others, core.WithClassicCluster())
	delivered := int64(0)
	for s, d := range classic {
		wantPub, wantRecv := int64(0), int64(n)
		if s == master {
			wantPub, wantRecv = n, 0
		}
		delivered += d["cluster_stats_messages_publish_received"]
		if d["cmdstat_publish"] != wantPub || d["cmdstat_spublish"] != 0 || d["cluster_stats_messages_publish_received"] != wantRecv {
			t.Errorf("classic, node %s (%s): %v; want %d publish, %d publish received", s.Addr(), cl.Role(s), d, wantPub, wantRecv)
		}
		t.Logf("classic, %d releases, node %s (%s): %v", n, s.Addr(), cl.Role(s), d)
	}
	t.Logf("bus deliveries per release: sharded 1 (the shard's replica), classic %d (every other node)", delivered/n)
}

// keyRecorder is an Observer that keeps, per key, the contended attempts
// and the last AcquireEnd.
type keyRecorder struct {
	core.NopObserver
	mu        sync.Mutex
	contended map[string]int
	ends      map[string]core.AcquireResult
}

func newKeyRecorder() *keyRecorder {
	return &keyRecorder{contended: map[string]int{}, ends: map[string]core.AcquireResult{}}
}

func (r *keyRecorder) Contended(_ context.Context, info core.AcquireInfo, _ core.Holder, _ int) {
	r.mu.Lock()
	r.contended[info.Key]++
	r.mu.Unlock()
}

func (r *keyRecorder) AcquireEnd(ctx context.Context, info core.AcquireInfo, res core.AcquireResult) context.Context {
	r.mu.Lock()
	r.ends[info.Key] = res
	r.mu.Unlock()
	return ctx
}

func (r *keyRecorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.contended[key]
}

func (r *keyRecorder) end(key string) core.AcquireResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ends[key]
}

// pubsubConns counts the pub/sub connections on s.
func pubsubConns(t *testing.T, s *redistest.Server) int {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Second)
	out, err := s.Client.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "flags=P") {
			n++
		}
	}
	return n
}

func shardNumSub(t *testing.T, s *redistest.Server, channel string) int64 {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Second)
	m, err := s.Client.PubSubShardNumSub(ctx, channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[channel]
}

// Waiters on keys of every shard, plain and with braces, are woken by the
// release message: each acquires in exactly 3 attempts (held, held after
// the subscription was confirmed, won), with the 30s TTL fallback far
// beyond the test's bound. Meanwhile the waiting Client has one pub/sub
// connection per master, each subscribed to that master's two channels,
// and nothing is left subscribed or connected afterwards.
func testClusterWakeEveryShard(t *testing.T, cl *redistest.Cluster) {
	keys := keysByMaster(t, cl, "wake")
	holder := testkit.Client(t, cl.NewClient())
	rec := newKeyRecorder()
	waiter := testkit.Client(t, cl.NewClient(), core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)

	var leases []*core.Lease
	results := map[string]<-chan acquired{}
	for _, ks := range keys {
		for _, k := range ks {
			l, err := holder.Acquire(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, l)
			results[k] = startWaiter(ctx, waiter, k)
		}
	}
	for k := range results {
		testkit.WaitFor(t, 10*time.Second, "two contended attempts on "+k, func() bool { return rec.count(k) >= 2 })
	}
	for m, ks := range keys {
		if n := pubsubConns(t, m); n != 1 {
			t.Errorf("master %s has %d pub/sub connections, want 1 for %d channels", m.Addr(), n, len(ks))
		}
		for _, k := range ks {
			if n := shardNumSub(t, m, hashKey(k)); n != 1 {
				t.Errorf("master %s: %d shard subscribers of %q, want 1", m.Addr(), n, k)
			}
		}
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for k, ch := range results {
		r := testkit.Recv(t, ch, 10*time.Second, "the waiter on "+k)
		if r.err != nil {
			t.Fatalf("waiter on %q: %v", k, r.err)
		}
		if err := r.l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if end := rec.end(k); end.Outcome != core.OutcomeAcquired || end.Attempts != 3 {
			t.Errorf("waiter on %q: %v after %d attempts, want acquired after 3", k, end.Outcome, end.Attempts)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "no subscriptions and no pub/sub connections left", func() bool {
		if testkit.Tables(waiter)["subscriptions"] != 0 {
			return false
		}
		for m := range keys {
			if pubsubConns(t, m) != 0 {
				return false
			}
		}
		return true
	})
}

// Killing the waiting Client's pub/sub connection on a master carrying two
// of its channels in different slots: both are subscribed again on a new
// connection (one SSUBSCRIBE per slot: go-redis's own resubscribe would
// send both in one and fail CROSSSLOT), the waiters retry, and the
// releases still wake them, long before the 30s TTL fallback. (How many
// retries the break and the confirmation cause is not fixed: two pokes can
// meet in the one-slot wake channel.)
func testClusterPubSubKill(t *testing.T, cl *redistest.Cluster) {
	keys := keysByMaster(t, cl, "kill")
	var master *redistest.Server
	for m := range keys {
		master = m
		break
	}
	ks := keys[master]
	if core.KeySlot(hashKey(ks[0])) == core.KeySlot(hashKey(ks[1])) {
		t.Fatal("want two slots")
	}
	holder := testkit.Client(t, cl.NewClient())
	rec := newKeyRecorder()
	waiter := testkit.Client(t, cl.NewClient(), core.WithObserver(rec))
	ctx := testkit.Context(t, 20*time.Second)
	var leases []*core.Lease
	var results []<-chan acquired
	for _, k := range ks {
		l, err := holder.Acquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		results = append(results, startWaiter(ctx, waiter, k))
	}
	for _, k := range ks {
		testkit.WaitFor(t, 10*time.Second, "two contended attempts", func() bool { return rec.count(k) >= 2 })
	}
	if n, err := master.Client.ClientKillByFilter(ctx, "TYPE", "pubsub").Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want the one connection for both channels", n, err)
	}
	for _, k := range ks {
		testkit.WaitFor(t, 10*time.Second, "a retry after the break", func() bool { return rec.count(k) >= 3 })
		testkit.WaitFor(t, 10*time.Second, "the resubscription", func() bool { return shardNumSub(t, master, hashKey(k)) == 1 })
	}
	if n := pubsubConns(t, master); n != 1 {
		t.Fatalf("%d pub/sub connections after the resubscription, want 1", n)
	}
	for i, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := testkit.Recv(t, results[i], 10*time.Second, "the waiter")
		if r.err != nil {
			t.Fatal(r.err)
		}
		_ = r.l.Release(ctx)
		if end := rec.end(ks[i]); end.Outcome != core.OutcomeAcquired || r.l.Token() <= l.Token() {
			t.Fatalf("waiter: %v, token %d after the holder's %d", end.Outcome, r.l.Token(), l.Token())
		}
	}
}

// Clients of the old layout (classic PUBLISH / SUBSCRIBE on a cluster) and
// of the new one (shard channels) take turns on one lock, as during a
// rolling deploy: never two holders, fencing tokens strictly increase, and
// every acquire completes (a waiter that does not hear the other kind's
// release retries when the holder's short TTL would end). Each goroutine
// runs a fixed number of cycles: old-layout waiters, deaf to the new ones'
// releases, get few turns while new ones contend, and catch up after.
func testClusterRollingDeploy(t *testing.T, cl *redistest.Cluster) {
	const key = "deploy:1"
	w := newWitness(key)
	const perGoroutine = 10
	ctx := testkit.Context(t, 60*time.Second)
	start := time.Now()
	var wg sync.WaitGroup
	var oldCycles, newCycles atomic.Int64
	for ci := range 4 {
		opts := []core.Option{core.WithTTL(200 * time.Millisecond), core.WithOwner(fmt.Sprintf("client-%d", ci))}
		cycles := &newCycles
		if ci%2 == 0 {
			opts = append(opts, core.WithClassicCluster())
			cycles = &oldCycles
		}
		c := testkit.Client(t, cl.NewClient(), opts...)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perGoroutine {
					l, err := c.Acquire(ctx, key, core.Wait(20*time.Second))
					if err != nil {
						t.Errorf("acquire: %v", err)
						return
					}
					w.enter(key, l.Token())
					time.Sleep(time.Millisecond) // a critical section worth overlapping
					w.leave(key)
					cycles.Add(1)
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := w.overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping holders", n)
	}
	if n := w.backward.Load(); n != 0 {
		t.Fatalf("%d fencing tokens not above the previous holder's", n)
	}
	if oldCycles.Load() != 4*perGoroutine || newCycles.Load() != 4*perGoroutine {
		t.Fatalf("old layout %d cycles, new %d, want %d each", oldCycles.Load(), newCycles.Load(), 4*perGoroutine)
	}
	t.Logf("old layout %d cycles, new layout %d, in %v", oldCycles.Load(), newCycles.Load(), time.Since(start).Round(time.Millisecond))
}

// Waiters in two Clients wait on a lock held by a third; change (a slot
// move or a failover) moves the lock's slot to another master while they
// wait. Both Clients follow it (one shard subscriber each on the new
// master), and after the release every waiter acquires in turn, well
// within the holder's 30s TTL, never two at once, tokens increasing.
func testClusterTopologyChange(t *testing.T, cl *redistest.Cluster, change func(slot int)) {
	keys := keysByMaster(t, cl, "move")
	var key string
	for _, ks := range keys {
		key = ks[1] // the braced one
		break
	}
	slot := core.KeySlot(hashKey(key))
	ctx := testkit.Context(t, 60*time.Second)
	holder := testkit.Client(t, cl.NewClient())
	recs := []*keyRecorder{newKeyRecorder(), newKeyRecorder()}
	waiters := []*core.Client{
		testkit.Client(t, cl.NewClient(), core.WithObserver(recs[0])),
		testkit.Client(t, cl.NewClient(), core.WithObserver(recs[1])),
	}
	l, err := holder.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	w := newWitness(key)
	w.enter(key, l.Token())
	var wg sync.WaitGroup
	var done atomic.Int64
	const perClient = 3
	for i, c := range waiters {
		for range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := c.Acquire(ctx, key)
				if err != nil {
					t.Errorf("waiter of client %d: %v", i, err)
					return
				}
				w.enter(key, l.Token())
				time.Sleep(time.Millisecond)
				w.leave(key)
				done.Add(1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}()
		}
	}
	for i := range waiters {
		testkit.WaitFor(t, 10*time.Second, "each client's head waiting", func() bool { return recs[i].count(key) >= 2 })
	}
	old := cl.Master(slot)
	change(slot)
	now := cl.Master(slot)
	if now == old {
		t.Fatal("the slot did not move")
	}
	testkit.WaitFor(t, 15*time.Second, "both clients subscribed on the new master", func() bool {
		return shardNumSub(t, now, hashKey(key)) == 2
	})
	start := time.Now()
	w.leave(key)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	testkit.Recv(t, finished, 15*time.Second, "every waiter")
	if n := done.Load(); n != 2*perClient {
		t.Fatalf("%d of %d waiters acquired", n, 2*perClient)
	}
	if n := w.overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping holders", n)
	}
	if n := w.backward.Load(); n != 0 {
		t.Fatalf("%d fencing tokens not above the previous holder's", n)
	}
	t.Logf("slot %d moved from %s to %s; %d waiters acquired in %v after the release", slot, old.Addr(), now.Addr(), done.Load(), time.Since(start).Round(time.Millisecond))
}
