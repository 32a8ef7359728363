package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// s17Requests is how many requests the workload of
// TestS17PaymentsUnderFaults sends: payments, each sent 1 to 4 times.
const s17Requests = 1000

// payPlan is how one payment's requests are sent: burst copies at once
// (a hedging client, retries reaching several replicas together), then
// later copies one after another once an answer came (a client that
// timed out and sent it again).
type payPlan struct {
	id           int64
	burst, later int
}

// s17Plan draws payments until their copies make s17Requests but one:
// the last is the retry of the payment whose owner the stall froze.
func s17Plan(rng *rand.Rand) []payPlan {
	var plans []payPlan
	for sent := 0; sent < s17Requests-1; {
		k := min(1+rng.IntN(4), s17Requests-1-sent)
		burst := 1 + rng.IntN(k)
		plans = append(plans, payPlan{id: int64(len(plans)), burst: burst, later: k - burst})
		sent += k
	}
	return plans
}

// payClient is the client side of the workload: it sends requests until
// each is answered, and counts how.
type payClient struct {
	p        *payments
	reps     []*replica
	answered atomic.Int64 // requests answered
	attempts atomic.Int64
	busy     atomic.Int64 // attempts refused: in progress (409)
	down     atomic.Int64 // attempts that failed: Redis did not answer (503)
	replays  atomic.Int64
	bad      chan string // answers that break the contract

	stalling *replica          // the replica whose connections the stall freezes
	stall    atomic.Bool       // armed: stall the next handler of stalling before its write
	stalled  chan int64        // the payment whose write was stalled
	freeze   func(freeze bool) // pauses (true) or resumes the stalling replica's proxies
}

// send is one request of payment id with fingerprint fp, first to replica
// first, retried on the next replica until it is answered: after the
// hint when in progress (at most 50 ms: a live owner's hint stays near
// the TTL, and its answer comes sooner), after 20 ms when Redis did not answer, at once
// when its handler gave up its claim. It returns the answer, or the error
// of a request refused for good (ErrFingerprint).
func (c *payClient) send(ctx context.Context, id int64, fp string, first int) (string, error) {
	for k := first; ctx.Err() == nil; k++ {
		r := c.reps[k%len(c.reps)]
		c.attempts.Add(1)
		cl, err := r.claim(ctx, id, fp)
		switch {
		case errors.Is(err, core.ErrFingerprint):
			return "", err
		case errors.Is(err, core.ErrNotAcquired):
			c.busy.Add(1)
			sleep(ctx, min(retryAfter(err), 50*time.Millisecond))
		case err != nil:
			c.down.Add(1)
			sleep(ctx, 20*time.Millisecond)
		case cl.Replayed():
			c.replays.Add(1)
			if !strings.HasPrefix(string(cl.Payload), fmt.Sprintf("paid %s ", payKey(id))) {
				c.bad <- fmt.Sprintf("%s replayed %q", payKey(id), cl.Payload)
			}
			return string(cl.Payload), nil
		default:
			if answer, ok, _ := c.p.serve(ctx, r, id, cl, func() { c.work(r, id) }); ok {
				return answer, nil
			}
		}
	}
	return "", ctx.Err()
}

// work is the handler's work between its read and its write (2 ms, so
// that the faults find handlers in flight); when the stall is armed and r
// is the stalling replica, it freezes r's connections first, so that the
// write goes into them.
func (c *payClient) work(r *replica, id int64) {
	if r == c.stalling && c.stall.CompareAndSwap(true, false) {
		c.freeze(true)
		c.stalled <- id
	}
	time.Sleep(2 * time.Millisecond)
}

// run sends plan's requests: its burst at once, then the later copies one
// by one, each request counted when answered.
func (c *payClient) run(ctx context.Context, t *testing.T, plan payPlan) {
	fp := payFingerprint(plan.id)
	answer := func(first int) {
		if _, err := c.send(ctx, plan.id, fp, first); err != nil {
			c.bad <- fmt.Sprintf("%s: %v", payKey(plan.id), err)
		}
		c.answered.Add(1)
	}
	var wg sync.WaitGroup
	for i := range plan.burst {
		wg.Go(func() { answer(int(plan.id) + i) })
	}
	wg.Wait()
	for i := range plan.later {
		answer(int(plan.id) + plan.burst + i)
	}
}

// 1,000 requests of payments, each sent 1 to 4 times (some copies at
// once, some after the first was answered), through four replicas (core
// Clients) while the faults come one after another, each once the
// workload answered a share of its requests: two owners killed mid-flight
// (child processes holding six of the payments' claims, one after
// writing, one before), the records' Redis frozen (SIGSTOP) past the
// claims' TTL, and one replica's connections stalled past it. When the
// retries settle, the Ledger must show every payment applied exactly
// once, the History no two handlers of one payment at once; a further
// retry of every payment applies nothing, and a request with another
// body under a used key is refused (ErrFingerprint).
func TestS17PaymentsUnderFaults(t *testing.T) {
	const ttl = 500 * time.Millisecond
	plans := s17Plan(rand.New(rand.NewPCG(17, 36)))
	ids := make([]int64, len(plans))
	for i, pl := range plans {
		ids[i] = pl.id
	}
	p := newPayments(t, payFenced, ttl, ids...)
	lock := redistest.Start(t)
	// A frozen Redis fails a call after 300 ms (a 503 to the client), not
	// go-redis's default 3 s.
	fast := func(o *redis.Options) { o.ReadTimeout = 300 * time.Millisecond }
	pxLock, pxStore := newProxy(t, lock.Addr()), newProxy(t, p.store.Addr())
	c := &payClient{p: p, bad: make(chan string, s17Requests), stalled: make(chan int64, 1)}
	for i := range 3 {
		c.reps = append(c.reps, p.replica(fmt.Sprint("r", i), lock.NewClient(fast), ""))
	}
	c.stalling = p.replica("r3 (stalled)", via(lock, pxLock.Addr(), fast), pxStore.Addr())
	c.reps = append(c.reps, c.stalling)
	c.freeze = func(freeze bool) {
		for _, px := range []*tcpproxy.Proxy{pxLock, pxStore} {
			if freeze {
				px.Pause()
			} else {
				px.Resume()
			}
		}
	}
	ctx := testkit.Context(t, 60*time.Second)

	wrote := startClaimHolder(t, p, lock, []int64{0, 1, 2}, true)
	didNot := startClaimHolder(t, p, lock, []int64{3, 4, 5}, false)

	var stalledID atomic.Int64
	stalledID.Store(-1)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		at := func(n int64) {
			for c.answered.Load() < n && ctx.Err() == nil {
				sleep(ctx, time.Millisecond)
			}
		}
		at(100)
		wrote.kill()
		didNot.kill()
		at(300)
		lock.Pause()
		sleep(ctx, 2*ttl)
		lock.Resume()
		at(600)
		c.stall.Store(true)
		select {
		case id := <-c.stalled:
			// The payment retried on another replica: taken over and
			// applied while the stalled write waits in the proxy.
			if _, err := c.send(ctx, id, payFingerprint(id), 0); err != nil {
				c.bad <- fmt.Sprintf("%s retried past the stalled owner: %v", payKey(id), err)
			}
			c.answered.Add(1)
			stalledID.Store(id)
		case <-ctx.Done():
		}
		c.freeze(false)
	}()

	began := time.Now()
	work := make(chan payPlan)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for pl := range work {
				c.run(ctx, t, pl)
			}
		})
	}
	for _, pl := range plans {
		work <- pl
	}
	close(work)
	wg.Wait()
	recv(t, faultsDone, 30*time.Second, "the faults to end")
	took := time.Since(began)

	// Settled: one more retry of every payment applies nothing, and
	// another body under its key is refused.
	before := p.ledger.Totals()
	for _, pl := range plans {
		if _, err := c.send(ctx, pl.id, payFingerprint(pl.id), int(pl.id)); err != nil {
			t.Errorf("%s: settled retry: %v", payKey(pl.id), err)
		}
		if pl.id%10 == 0 {
			if _, err := c.send(ctx, pl.id, "amount=other", int(pl.id)); !errors.Is(err, core.ErrFingerprint) {
				t.Errorf("%s: another body under the key: %v, want ErrFingerprint", payKey(pl.id), err)
			}
		}
	}
	if after := p.ledger.Totals(); after.Applied != before.Applied {
		t.Errorf("the settled retries applied %d payments", after.Applied-before.Applied)
	}
	close(c.bad)
	for b := range c.bad {
		t.Error(b)
	}
	// The killed owners' payments were run again after them: those one
	// of them had applied were found applied, the others applied once.
	for id := range int64(6) {
		if e := p.ledger.Entry(payKey(id)); e.Runs < 2 || (id < 3) != (e.Found > 0) {
			t.Errorf("%s, claimed by a killed owner that wrote = %v: %v", payKey(id), id < 3, e)
		}
	}
	// The stalled owner's write landed after the retry's and was refused.
	if id := stalledID.Load(); id < 0 {
		t.Errorf("no handler of the stalled replica was caught before its write")
	} else if e := p.ledger.Entry(payKey(id)); e.Refused != 1 {
		t.Errorf("%s, its owner stalled before its write: %v, want its late write refused", payKey(id), e)
	}
	if c.down.Load() == 0 {
		t.Errorf("no attempt failed while Redis was frozen: the fault did not bite")
	}
	t.Logf("%d requests of %d payments in %v: %d attempts, %d in progress, %d unavailable, %d replays",
		s17Requests, len(plans), took.Round(time.Millisecond), c.attempts.Load(), c.busy.Load(), c.down.Load(), c.replays.Load())
	p.verdict()
}
