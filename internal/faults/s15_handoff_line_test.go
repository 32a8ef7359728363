package faults_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// scriptPipelines counts the pipelines of two or more script calls (a
// key's line of hand-offs sends those: the scenarios here have one key, so a
// renewal pipeline holds one call) and the pipelines that re-send scripts
// with EVAL after NOSCRIPT. Its count method is a pipelineHook.
type scriptPipelines struct{ lines, evals atomic.Int64 }

func (h *scriptPipelines) count(cmds []redis.Cmder) {
	scripts, evals := 0, 0
	for _, c := range cmds {
		switch c.Name() {
		case "evalsha":
			scripts++
		case "eval":
			scripts++
			evals++
		}
	}
	if scripts >= 2 {
		h.lines.Add(1)
	}
	if evals > 0 {
		h.evals.Add(1)
	}
}

// lineRun drives workers goroutines per Client on one hot key for about
// two seconds: acquire, a fenced increment (no hold, or 200µs), release.
// Acquire and Release failures are counted, not fatal, when tolerate says
// they are expected; every other error fails the test.
type lineRun struct {
	clients  []*core.Client
	workers  int
	key      string
	tolerate func(error) bool

	hist       *faults.History
	res        *faults.Resource
	cycles     atomic.Int64
	acqErrs    atomic.Int64
	releaseErr atomic.Int64
}

func (r *lineRun) run(t *testing.T, ctx context.Context) {
	r.hist, r.res = faults.NewHistory(), faults.NewResource()
	stopAt := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for ci, c := range r.clients {
		for g := range r.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprint(ci, "/", g)
				for i := 0; i < 2000 && time.Now().Before(stopAt); i++ {
					l, err := c.Acquire(ctx, r.key, core.Wait(5*time.Second))
					if err != nil {
						if !r.tolerate(err) {
							t.Errorf("%s acquire: %v", who, err)
							return
						}
						r.acqErrs.Add(1)
						continue
					}
					hd := r.hist.Begin(who, l)
					if err := r.res.Increment(r.key, l.Token(), time.Duration(i%2)*200*time.Microsecond); err != nil {
						t.Errorf("%s write: %v", who, err)
					}
					hd.Released()
					if err := l.Release(ctx); err != nil {
						if !r.tolerate(err) {
							t.Errorf("%s release: %v", who, err)
							return
						}
						r.releaseErr.Add(1)
					}
					r.cycles.Add(1)
				}
			}()
		}
	}
	wg.Wait()
}

func handoffs(o *observer) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.ends {
		if e.Handoff {
			n++
		}
	}
	return n
}

// Scenario 15: a key's line of hand-offs inside a process (a receiver
// hands on before its own hand-off's reply; the scripts go as one pipeline
// behind the batch on its way) under faults.
//
//   - Connections cut: two Clients, each through a proxy that delays
//     replies by 1ms (so lines form), six workers each on one key, and
//     every 20ms all connections of one proxy are cut: pipelines of
//     hand-offs die with their replies unread. Believed holds never
//     overlap, tokens follow hold order, no update is lost, and nothing is
//     left in Redis after the TTL of a stranded give-back.
//   - Scripts flushed before each pipeline: every pipelined hand-off gets
//     NOSCRIPT and is re-sent with EVAL, in order. Nobody sees an error,
//     no lease is lost.
func TestS15HandoffLine(t *testing.T) {
	t.Run("connections cut", func(t *testing.T) {
		srv := redistest.Start(t)
		obs := newObserver()
		lines := &scriptPipelines{}
		var proxies []*tcpproxy.Proxy
		var clients []*core.Client
		for range 2 {
			px := newProxy(t, srv.Addr())
			px.SetLatency(tcpproxy.Downstream, time.Millisecond)
			rdb := via(srv, px.Addr())
			rdb.AddHook(pipelineHook(lines.count))
			proxies = append(proxies, px)
			clients = append(clients, newClient(t, rdb, core.WithTTL(2*time.Second), core.WithReleaseTimeout(500*time.Millisecond), core.WithObserver(obs)))
		}
		ctx := testkit.Context(t, 60*time.Second)
		warmScripts(t, ctx, clients[0], "s15:cut")

		stop := make(chan struct{})
		var cuts atomic.Int64
		var cwg sync.WaitGroup
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i := range 150 {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				cuts.Add(int64(proxies[i%2].CutAll()))
			}
		}()
		r := &lineRun{clients: clients, workers: 6, key: "s15:cut", tolerate: func(err error) bool {
			return errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotHeld) || errors.Is(err, core.ErrNotAcquired)
		}}
		r.run(t, ctx)
		close(stop)
		cwg.Wait()

		verdict(t, r.hist, r.res, false)
		noLeftovers(t, 5*time.Second, srv.Client)
		c := obs.counts()
		t.Logf("%d cycles (%d by a hand-off), %d pipelined lines, %d connections cut, %d acquire and %d release errors, %d leases lost",
			r.cycles.Load(), handoffs(obs), lines.lines.Load(), cuts.Load(), r.acqErrs.Load(), r.releaseErr.Load(), c.lost)
		if handoffs(obs) == 0 || lines.lines.Load() == 0 || cuts.Load() < 10 || r.releaseErr.Load()+int64(c.lost) == 0 {
			t.Errorf("proved little: no hand-off, no pipelined line, too few cuts, or no cut hit a hold")
		}
	})

	t.Run("scripts flushed before each pipeline", func(t *testing.T) {
		srv := redistest.Start(t)
		obs := newObserver()
		lines := &scriptPipelines{}
		px := newProxy(t, srv.Addr())
		px.SetLatency(tcpproxy.Downstream, time.Millisecond)
		ctx := testkit.Context(t, 60*time.Second)
		rdb := via(srv, px.Addr())
		rdb.AddHook(flushBeforePipelines(ctx, srv))
		rdb.AddHook(pipelineHook(lines.count))
		c := newClient(t, rdb, core.WithObserver(obs))
		r := &lineRun{clients: []*core.Client{c}, workers: 8, key: "s15:flush", tolerate: func(error) bool { return false }}
		r.run(t, ctx)

		verdict(t, r.hist, r.res, false)
		noLeftovers(t, 5*time.Second, srv.Client)
		n := obs.counts()
		t.Logf("%d cycles (%d by a hand-off), %d pipelined lines, %d EVAL re-sends", r.cycles.Load(), handoffs(obs), lines.lines.Load(), lines.evals.Load())
		if n.lost != 0 {
			t.Errorf("%d leases lost", n.lost)
		}
		if lines.lines.Load() == 0 || lines.evals.Load() == 0 {
			t.Errorf("proved little: %d pipelined lines, %d EVAL re-sends", lines.lines.Load(), lines.evals.Load())
		}
	})
}
