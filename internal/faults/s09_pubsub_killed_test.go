package faults_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// s09TTL is long so that the waiters' fallback timer (the holder's
// remaining TTL, ~10s) cannot be what wakes them: the bound below is 5s.
const s09TTL = 10 * time.Second

// Scenario 9: the waiters' pub/sub connection is killed while they wait,
// and the release messages are published while it is down (lost: pub/sub is
// at-most-once). The waiters still acquire, well before the fallback timer,
// because a reconnect wakes every waiter to retry.
//
//   - CLIENT KILL TYPE pubsub on the server, releases right after;
//   - the waiters' connection cut by a proxy that then holds every new
//     connection until the releases were published to no subscriber
//     (PUBSUB NUMSUB = 0): the messages are certainly lost.
func TestS09PubSubKilledWhileWaiting(t *testing.T) {
	for _, viaProxy := range []bool{false, true} {
		name := map[bool]string{false: "CLIENT KILL TYPE pubsub", true: "connection cut, messages lost"}[viaProxy]
		t.Run(name, func(t *testing.T) {
			keys := []string{"s09:a", "s09:b", "s09:c"}
			srv := redistest.Start(t)
			hist := faults.NewHistory()
			ctx := testkit.Context(t, 60*time.Second)
			holder := newClient(t, srv.NewClient(), core.WithTTL(s09TTL), core.WithOwner("holder"))
			var px *tcpproxy.Proxy
			wrdb := srv.NewClient()
			if viaProxy {
				px = newProxy(t, srv.Addr())
				wrdb = via(srv, px.Addr())
			}
			wobs := newObserver()
			w := newClient(t, wrdb, core.WithTTL(s09TTL), core.WithObserver(wobs), core.WithOwner("waiter"))

			var held []*core.Lease
			var holds []*faults.Hold
			for _, k := range keys {
				l, err := holder.Acquire(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, l)
				holds = append(holds, hist.Begin("holder", l))
			}
			live := faults.NewLiveness(keys...)
			var wg sync.WaitGroup
			for _, k := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := w.Acquire(ctx, k, core.Wait(30*time.Second))
					if err != nil {
						live.Failed(k, err)
						return
					}
					live.Acquired(k)
					hd := hist.Begin("waiter", l)
					hd.Released()
					_ = l.Release(ctx)
				}()
			}
			// Each waiter was refused, subscribed, and refused again once the
			// subscription was confirmed: now it waits for a message.
			testkit.WaitFor(t, 10*time.Second, "3 waiters subscribed", func() bool { return wobs.counts().contended >= 2*len(keys) })
			testkit.WaitFor(t, 10*time.Second, "the channels subscribed on the server", func() bool {
				return numsub(t, srv.Client, keys) == len(keys)
			})

			if viaProxy {
				px.Pause() // new connections are held: no resubscription
				px.CutAll()
				testkit.WaitFor(t, 10*time.Second, "no subscriber left", func() bool { return numsub(t, srv.Client, keys) == 0 })
			} else {
				n, err := srv.Client.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
				if err != nil || n < 1 {
					t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v", n, err)
				}
			}
			subsAtRelease := numsub(t, srv.Client, keys)
			for i, l := range held {
				holds[i].Released()
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if viaProxy {
				px.Resume()
			}
			live.Healed()
			wg.Wait()
			if err := live.Check(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			verdict(t, hist, nil, false)
			noLeftovers(t, 5*time.Second, srv.Client)
			t.Logf("%d of %d channels subscribed when the releases were published; all waiters acquired within %v; %d refused attempts",
				subsAtRelease, len(keys), live.Latest().Round(time.Millisecond), wobs.counts().contended)
		})
	}
}

// numsub counts the lock channels of keys with at least one subscriber.
func numsub(t *testing.T, rdb *redis.Client, keys []string) int {
	t.Helper()
	chans := make([]string, len(keys))
	for i, k := range keys {
		chans[i] = "lockkit:v1:c:k:" + k
	}
	ctx := testkit.Context(t, 5*time.Second)
	m, err := rdb.PubSubNumSub(ctx, chans...).Result()
	if err != nil {
		t.Fatal(fmt.Errorf("PUBSUB NUMSUB: %w", err))
	}
	n := 0
	for _, c := range m {
		if c > 0 {
			n++
		}
	}
	return n
}
