package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Scenario 16: a counter in a fenced store (package fence, on a
// redis-server of its own that no fault touches), incremented by
// read-modify-writes under a lock whose side the fault breaks, judged by
// porcupine over every increment's call, read, outcome and return
// (faults.CounterHistory).
//
// In every run workers of three Clients increment the counter, and one
// more holder, A, has its increment split by the fault in the interleaving
// that a fenced write alone lets through: A reads, its lease ends (or the
// lock forgets it), the next holder reads, A's write arrives (held until
// then in a paused proxy, or in a frozen process), the next holder writes.
// The order is forced, not hoped for: a gate holds the write of whoever
// reads after A with a newer token until A's write came back.
//
// Each run is made three ways. Claim then Set, the pattern package fence
// documents, must be linearizable and A's write refused; the controls, Get
// then Set (the write fenced, the read not) and Get then a plain HSET (no
// fence), must be reported non-linearizable every time: the check fails
// where it should.
type rmwMode string

const (
	claimThenSet rmwMode = "Claim then Set"
	getThenSet   rmwMode = "control Get then Set"
	unfenced     rmwMode = "control Get then HSET"
)

var rmwModes = []rmwMode{claimThenSet, getThenSet, unfenced}

// counterKey is the lock's key and the store's.
const counterKey = "s16:counter"

// Workers per run: three Clients of four.
const s16Clients, s16PerClient = 3, 4

// s16Ops is how many increments the workers end before and after the fault.
const s16Ops = 12

// counterRun is one run of scenario 16 in one mode.
type counterRun struct {
	t     *testing.T
	mode  rmwMode
	store *redistest.Server
	hist  *faults.CounterHistory
	gate  *rmwGate
	ended atomic.Int64 // increments the workers ended

	stopOnce sync.Once
	stop     context.CancelFunc // ends the workers' waits
	wg       sync.WaitGroup
}

func newCounterRun(t *testing.T, mode rmwMode) *counterRun {
	r := &counterRun{t: t, mode: mode, store: redistest.Start(t), hist: faults.NewCounterHistory(),
		gate: &rmwGate{held: make(chan struct{}), open: make(chan struct{})}, stop: func() {}}
	t.Cleanup(r.stopWorkers)
	return r
}

// rmwGate puts the next holder's write after A's: armed by A between its
// read and its write, it holds the write of every holder with a newer
// token than A's that reads later, until it opens (once A's write came
// back). A holder with an older token passes: after a failover one can
// confirm a grant the promoted replica received before it lagged, whose
// token was fixed then, below A's; its read and write are recorded like
// any other, and the store refuses what it should.
type rmwGate struct {
	armed atomic.Int64 // A's token; 0: not armed
	older atomic.Int64 // holders with an older token that read after A
	once  sync.Once
	held  chan struct{} // closed when a holder newer than A read after A
	open  chan struct{}
}

func (g *rmwGate) pass(token int64) {
	a := g.armed.Load()
	if a == 0 {
		return
	}
	if token <= a {
		g.older.Add(1)
		return
	}
	g.once.Do(func() { close(g.held) })
	<-g.open
}

// storeVia returns a fenced store and a plain client on the counter's
// server, through addr (a proxy; "" for none).
func (r *counterRun) storeVia(addr string) (*fence.Redis, *redis.Client) {
	rdb := r.store.NewClient(func(o *redis.Options) {
		if addr != "" {
			o.Addr = addr
		}
		o.ReadTimeout, o.WriteTimeout = 20*time.Second, 20*time.Second // a held write waits that long
	})
	s, err := fence.NewRedis(rdb)
	if err != nil {
		r.t.Fatal(err)
	}
	return s, rdb
}

// increment is one recorded read-modify-write of the counter with token,
// read and written as the run's mode says; beforeWrite runs in between.
func (r *counterRun) increment(ctx context.Context, who string, s *fence.Redis, rdb *redis.Client, token int64, beforeWrite func(token int64)) error {
	op := r.hist.Begin(fmt.Sprintf("%s (token %d)", who, token))
	var e fence.Entry
	var err error
	if r.mode == claimThenSet {
		e, _, err = s.Claim(ctx, counterKey, token)
	} else {
		e, _, err = s.Get(ctx, counterKey)
	}
	if err != nil {
		op.End(outcomeOf(err))
		return err
	}
	v, err := counterValue(e)
	if err != nil {
		op.End(faults.Unknown)
		return err
	}
	op.Read(v)
	beforeWrite(token)
	err = r.write(ctx, s, rdb, v+1, token)
	op.End(outcomeOf(err))
	return err
}

func (r *counterRun) write(ctx context.Context, s *fence.Redis, rdb *redis.Client, v, token int64) error {
	if r.mode == unfenced {
		return rdb.HSet(ctx, counterKey, "v", strconv.FormatInt(v, 10)).Err()
	}
	return s.Set(ctx, counterKey, strconv.FormatInt(v, 10), token)
}

func counterValue(e fence.Entry) (int64, error) {
	if e.Value == "" {
		return 0, nil
	}
	return strconv.ParseInt(e.Value, 10, 64)
}

func outcomeOf(err error) faults.Outcome {
	switch {
	case err == nil:
		return faults.Written
	case errors.Is(err, fence.ErrStale):
		return faults.Refused
	default:
		return faults.Unknown
	}
}

// startWorkers starts s16PerClient workers on each client: each takes the
// lock and increments, again and again, until the run stops them.
func (r *counterRun) startWorkers(ctx context.Context, clients []*core.Client, ttl time.Duration) {
	wctx, cancel := context.WithCancel(ctx)
	r.stop = cancel
	for i, c := range clients {
		s, rdb := r.storeVia("")
		for j := range s16PerClient {
			who := fmt.Sprintf("c%d.w%d", i, j)
			r.wg.Go(func() {
				for wctx.Err() == nil {
					l, err := c.Acquire(wctx, counterKey, core.Wait(5*time.Second), core.TTL(ttl))
					if err != nil {
						select { // Redis down or frozen: try again
						case <-wctx.Done():
						case <-time.After(10 * time.Millisecond):
						}
						continue
					}
					_ = r.increment(ctx, who, s, rdb, l.Token(), r.gate.pass)
					r.ended.Add(1)
					_ = l.Release(ctx)
				}
			})
		}
	}
}

// awaitOps waits until the workers ended n more increments.
func (r *counterRun) awaitOps(n int64) {
	r.t.Helper()
	target := r.ended.Load() + n
	testkit.WaitFor(r.t, 30*time.Second, fmt.Sprintf("%d increments by the workers", n), func() bool { return r.ended.Load() >= target })
}

func (r *counterRun) stopWorkers() {
	r.stopOnce.Do(func() {
		r.stop()
		r.gate.once.Do(func() { close(r.gate.held) })
		select {
		case <-r.gate.open:
		default:
			close(r.gate.open)
		}
		r.wg.Wait()
	})
}

// heldWrite is A's increment: read, and its write sent into a paused proxy.
type heldWrite struct {
	lease *core.Lease
	px    *tcpproxy.Proxy
	done  chan error
}

// readAndHold has a acquire the counter's lock and read, then sends its
// write into a paused proxy, where it waits until land.
func (r *counterRun) readAndHold(ctx context.Context, a *core.Client, ttl time.Duration) *heldWrite {
	t := r.t
	t.Helper()
	px := newProxy(t, r.store.Addr())
	s, rdb := r.storeVia(px.Addr())
	la, err := a.Acquire(ctx, counterKey, core.Wait(20*time.Second), core.TTL(ttl))
	if err != nil {
		t.Fatalf("A's acquire: %v", err)
	}
	hw := &heldWrite{lease: la, px: px, done: make(chan error, 1)}
	read := make(chan int64, 1)
	go func() {
		hw.done <- r.increment(ctx, "A", s, rdb, la.Token(), func(token int64) {
			r.gate.armed.Store(token)
			sent := px.Stats().Upstream
			px.Pause()
			read <- sent
		})
	}()
	sent := recv(t, read, 10*time.Second, "A's read")
	testkit.WaitFor(t, 5*time.Second, "A's write in flight", func() bool { return px.Stats().Upstream > sent })
	return hw
}

// land waits until a holder after A has read, lets A's write arrive and
// returns what A was told; then the next holder writes.
func (r *counterRun) land(hw *heldWrite) error {
	r.t.Helper()
	recv(r.t, r.gate.held, 30*time.Second, "the next holder's read")
	hw.px.Resume()
	err := recv(r.t, hw.done, 30*time.Second, "A's write to come back")
	close(r.gate.open)
	return err
}

// verdict stops the workers, reads the counter and judges the history:
// with Claim then Set linearizable and A's write refused; in the controls
// A's write accepted and the history not linearizable.
func (r *counterRun) verdict(ctx context.Context, aErr error) {
	t := r.t
	t.Helper()
	r.stopWorkers()
	s, _ := r.storeVia("")
	e, _, err := s.Get(ctx, counterKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := counterValue(e)
	if err != nil {
		t.Fatal(err)
	}
	r.hist.Final(v)
	checked := time.Now()
	res := r.hist.Check(time.Minute)
	took := time.Since(checked)
	st := r.hist.Stats()
	if r.mode == claimThenSet {
		if !errors.Is(aErr, fence.ErrStale) {
			t.Errorf("A's late write = %v, want ErrStale: the next holder's claim came first", aErr)
		}
		if res != porcupine.Ok {
			t.Errorf("porcupine: %v, want Ok (linearizable); increments:\n%s", res, r.hist)
		}
	} else {
		if aErr != nil {
			t.Errorf("A's late write = %v, want it accepted: with %s nothing fences the read", aErr, r.mode)
		}
		if res != porcupine.Illegal {
			t.Errorf("porcupine: %v, want Illegal: the control must be caught; increments:\n%s", res, r.hist)
		}
	}
	t.Logf("%s: %v, counter %d; porcupine: %v in %v; %d read after A with an older token",
		r.mode, st, v, res, took.Round(time.Millisecond), r.gate.older.Load())
}

// s16 runs scenario in each mode as a subtest.
func s16(t *testing.T, scenario func(t *testing.T, r *counterRun)) {
	for _, mode := range rmwModes {
		t.Run(string(mode), func(t *testing.T) { scenario(t, newCounterRun(t, mode)) })
	}
}

// warmUp starts the workers, on s16Clients Clients each on a go-redis
// client of its own from lock, and waits for their first increments. It
// returns the run's context.
func (r *counterRun) warmUp(lock func() *redis.Client, ttl time.Duration) context.Context {
	r.t.Helper()
	ctx := testkit.Context(r.t, 90*time.Second)
	clients := make([]*core.Client, s16Clients)
	for i := range clients {
		clients[i] = newClient(r.t, lock(), core.WithOwner(fmt.Sprint("c", i)))
	}
	r.startWorkers(ctx, clients, ttl)
	r.awaitOps(s16Ops)
	return ctx
}

// The lock's Redis frozen (SIGSTOP) while A holds the lock (TTL 1s) until
// A's lease ended at its deadline; after the resume the lock expires on
// the server and a worker takes it.
func TestS16FencedCounterThroughServerPause(t *testing.T) {
	s16(t, func(t *testing.T, r *counterRun) {
		const ttl = time.Second
		lock := redistest.Start(t)
		ctx := r.warmUp(func() *redis.Client { return lock.NewClient() }, ttl)
		hw := r.readAndHold(ctx, newClient(t, lock.NewClient(), core.WithOwner("A")), ttl)
		lock.Pause()
		recv(t, hw.lease.Done(), 10*time.Second, "A's lease to end while Redis is frozen")
		lock.Resume()
		aErr := r.land(hw)
		r.awaitOps(s16Ops)
		r.verdict(ctx, aErr)
	})
}

// A's connections (to the lock's Redis and to the store) stall, as when
// its host is cut off: its renewals do not arrive, its lease ends at its
// deadline, the lock expires on the server and a worker takes it; then the
// network heals and A's write lands.
func TestS16FencedCounterThroughStalledConnections(t *testing.T) {
	s16(t, func(t *testing.T, r *counterRun) {
		const ttl = time.Second
		lock := redistest.Start(t)
		pxLock := newProxy(t, lock.Addr())
		ctx := r.warmUp(func() *redis.Client { return lock.NewClient() }, ttl)
		hw := r.readAndHold(ctx, newClient(t, via(lock, pxLock.Addr()), core.WithOwner("A")), ttl)
		pxLock.Pause()
		recv(t, hw.lease.Done(), 10*time.Second, "A's lease to end while cut off")
		aErr := r.land(hw)
		pxLock.Resume()
		r.awaitOps(s16Ops)
		r.verdict(ctx, aErr)
	})
}

// The lock's Redis restarted empty while A holds the lock: a worker takes
// it at once, while A still believes. Then two more restarts while the
// workers run, without any scheduling help: holders that believe at once
// increment side by side.
func TestS16FencedCounterThroughRestart(t *testing.T) {
	s16(t, func(t *testing.T, r *counterRun) {
		const ttl = 2 * time.Second
		lock := redistest.Start(t)
		ctx := r.warmUp(func() *redis.Client { return lock.NewClient() }, ttl)
		hw := r.readAndHold(ctx, newClient(t, lock.NewClient(), core.WithOwner("A")), ttl)
		lock.Restart(false)
		aErr := r.land(hw)
		for range 2 {
			r.awaitOps(s16Ops)
			lock.Restart(false)
		}
		r.awaitOps(s16Ops)
		r.verdict(ctx, aErr)
	})
}

// A failover to a replica that did not get A's lock (its replication link
// held since before A's acquire): a worker takes the lock on the promoted
// replica at once.
func TestS16FencedCounterThroughFailover(t *testing.T) {
	s16(t, func(t *testing.T, r *counterRun) {
		const ttl = 2 * time.Second
		p := startReplicated(t)
		onVIP := func() *redis.Client { return via(p.primary, p.vip.Addr()) }
		ctx := r.warmUp(onVIP, ttl)
		p.isolate()
		hw := r.readAndHold(ctx, newClient(t, onVIP(), core.WithOwner("A")), ttl)
		p.failover(t)
		aErr := r.land(hw)
		r.awaitOps(s16Ops)
		r.verdict(ctx, aErr)
	})
}
