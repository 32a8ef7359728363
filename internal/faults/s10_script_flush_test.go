package faults_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 10: SCRIPT FLUSH every 50ms while two clients acquire, renew
// (holds longer than TTL/3) and release. go-redis answers NOSCRIPT by
// re-sending the script (and the engine's renewal pipeline does the same),
// so no caller sees an error: every acquire and release succeeds, no
// renewal fails, no lease is lost, believed holds never overlap and no
// update is lost — on a single primary, on a primary with WithReplicaAck
// (its own EVALSHA+WAIT pipeline handles NOSCRIPT) and on a 3-node Redlock.
func TestS10ScriptFlushMidRun(t *testing.T) {
	for _, mode := range []string{"single primary", "WithReplicaAck", "Redlock 3 nodes"} {
		t.Run(mode, func(t *testing.T) {
			var srvs []*redistest.Server
			switch mode {
			case "Redlock 3 nodes":
				srvs = redistest.StartN(t, 3)
			case "WithReplicaAck":
				p := startReplicated(t)
				srvs = []*redistest.Server{p.primary} // flushed; the replica only acknowledges
			default:
				srvs = redistest.StartN(t, 1)
			}
			obs := newObserver()
			mk := func(owner string) *core.Client {
				opts := []core.Option{core.WithTTL(time.Second), core.WithObserver(obs), core.WithOwner(owner)}
				switch mode {
				case "Redlock 3 nodes":
					return newRedlock(t, clientsOf(srvs), append(opts, core.WithNodeTimeout(100*time.Millisecond))...)
				case "WithReplicaAck":
					opts = append(opts, core.WithReplicaAck(1, 500*time.Millisecond))
				}
				return newClient(t, srvs[0].NewClient(), opts...)
			}
			clients := []*core.Client{mk("a"), mk("b")}
			keys := []string{"s10:x", "s10:y"}
			hist, res := faults.NewHistory(), faults.NewResource()
			ctx := testkit.Context(t, 60*time.Second)

			stop := make(chan struct{})
			var flushes atomic.Int64
			var fwg sync.WaitGroup
			fwg.Add(1)
			go func() {
				defer fwg.Done()
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for range 200 {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					for _, s := range srvs {
						if err := s.Client.ScriptFlush(ctx).Err(); err != nil {
							t.Errorf("SCRIPT FLUSH: %v", err)
							return
						}
					}
					flushes.Add(1)
				}
			}()

			stopAt := time.Now().Add(2500 * time.Millisecond)
			var wg sync.WaitGroup
			var cycles atomic.Int64
			for ci, c := range clients {
				for g := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						who := fmt.Sprint(ci, g)
						key := keys[g]
						for i := 0; i < 100 && time.Now().Before(stopAt); i++ {
							l, err := c.Acquire(ctx, key, core.Wait(10*time.Second))
							if err != nil {
								t.Errorf("%s acquire: %v", who, err)
								return
							}
							hd := hist.Begin(who, l)
							hold := time.Duration(0)
							if i%3 == 0 {
								hold = 450 * time.Millisecond // past TTL/3: renewed under flushes
							}
							if err := res.Increment(key, l.Token(), hold); err != nil {
								t.Errorf("%s write: %v", who, err)
							}
							hd.Released()
							if err := l.Release(ctx); err != nil {
								t.Errorf("%s release: %v", who, err)
								return
							}
							cycles.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			close(stop)
			fwg.Wait()
			c := obs.counts()
			if c.renewErrs != 0 || c.lost != 0 {
				t.Errorf("observer %+v: renewals failed or leases lost under SCRIPT FLUSH", c)
			}
			if c.renewed == 0 || flushes.Load() < 10 || cycles.Load() < 8 {
				t.Errorf("proved little: %d renewals, %d flushes, %d cycles", c.renewed, flushes.Load(), cycles.Load())
			}
			verdict(t, hist, res, false)
			var rdbs []redis.UniversalClient
			for _, s := range srvs {
				rdbs = append(rdbs, s.Client)
			}
			noLeftovers(t, 5*time.Second, rdbs...)
			t.Logf("%d cycles, %d renewals, %d flushes", cycles.Load(), c.renewed, flushes.Load())
		})
	}
}

// With WithReplicaAck, an acquire must never count as held unless the
// replicas acknowledged it, whatever happens to the script cache. Here the
// replica receives nothing (its link is paused), and the cache is flushed
// before each EVALSHA+WAIT pipeline.
func TestS10ReplicaAckNotSkippedOnNoScript(t *testing.T) {
	p := startReplicated(t)
	ctx := testkit.Context(t, 30*time.Second)
	rdb := p.primary.NewClient()
	rdb.AddHook(flushBeforePipelines(ctx, p.primary))
	c := newClient(t, rdb, core.WithReplicaAck(1, 300*time.Millisecond))
	p.isolate()
	l, err := c.Acquire(ctx, "s10:ack")
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("acquire succeeded with no replica acknowledgement")
	}
	if !errors.Is(err, core.ErrReplicaAck) {
		t.Fatalf("acquire = %v, want ErrReplicaAck", err)
	}
}
