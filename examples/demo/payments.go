package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Payments are the request a client retries: it times out waiting for the
// answer and sends the same payment again, maybe to another replica. Every
// payment carries an idempotency key, its id, unique to the run; one in
// retryEvery is sent twice, the second copy to another replica of the
// same protocol (gin, echo and fiber share the HTTP route's records; the
// gRPC replica is the only one of its protocol, so a gRPC payment is
// retried on it), half of them at once (the retry races the first) and
// half once the first was answered. A copy answered "in progress" (409 +
// Retry-After, Aborted + RetryInfo: its key runs elsewhere) is sent again
// after the hint, as a client honouring it would (each wait bounded by
// maxRetryWait, at most maxSends sends), until it gets the answer.
const (
	retryEvery   = 5
	maxSends     = 20
	maxRetryWait = 250 * time.Millisecond
)

// ledger is the client's side of the payments: each one sent, by key, and
// whether a send of it was answered 2xx (the first run's answer or its
// replay). The witness holds the book's side: which runs applied each.
type ledger struct {
	run string // unique to the run: a key is never one of an earlier run on the same Redis

	mu   sync.Mutex
	pays map[string]*payment
	n    atomic.Int64

	retried, atOnce atomic.Int64 // payments sent twice; of them, the second copy at once
}

// payment is one payment as the client knows it.
type payment struct {
	order    string
	cents    int64
	answered bool // some send was answered 2xx
}

func newLedger(start time.Time) *ledger {
	return &ledger{run: strconv.FormatInt(start.UnixNano(), 36), pays: map[string]*payment{}}
}

// next gives r a new payment's key and records it.
func (l *ledger) next(r *request) {
	r.key = "pay-" + l.run + "-" + strconv.FormatInt(l.n.Add(1), 10)
	l.mu.Lock()
	l.pays[r.key] = &payment{order: r.id, cents: r.cents}
	l.mu.Unlock()
}

// answered records that a send of payment key was answered 2xx.
func (l *ledger) answered(key string) {
	l.mu.Lock()
	if p := l.pays[key]; p != nil {
		p.answered = true
	}
	l.mu.Unlock()
}

// sender sends one request to a target, counts it in that replica's tally,
// and, for a payment, records a 2xx answer and sends again while its key
// runs elsewhere.
type sender struct {
	cfg     config
	ctx     context.Context
	targets []target
	tallies []*tally
	pays    *ledger
}

func (s *sender) send(k int, r request) {
	for range maxSends {
		// A request's deadline is well past its wait budget: it should
		// never be what ends it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), s.cfg.wait+10*time.Second)
		rp, err := s.targets[k].do(rctx, r)
		cancel()
		s.tallies[k].add(r.op, rp, err)
		if r.key != "" && rp.outcome == outOK {
			s.pays.answered(r.key)
		}
		if r.key == "" || !rp.inProgress {
			return
		}
		time.Sleep(min(rp.after, maxRetryWait))
	}
}

// pay sends payment r to target k and, for one in retryEvery, its retry
// to another replica of the same protocol: at once or after the first
// answer, whichever rng says.
func (s *sender) pay(rng *rand.Rand, k int, r request) {
	s.pays.next(&r)
	if rng.IntN(retryEvery) != 0 {
		s.send(k, r)
		return
	}
	again := s.other(rng, k)
	s.pays.retried.Add(1)
	s.tallies[again].retries.Add(1)
	if rng.IntN(2) == 0 {
		s.send(k, r)
		s.send(again, r)
		return
	}
	s.pays.atOnce.Add(1)
	var wg sync.WaitGroup
	wg.Go(func() { s.send(k, r) })
	s.send(again, r)
	wg.Wait()
}

// other is a replica other than k that serves payments on k's protocol,
// or k when it is the only one.
func (s *sender) other(rng *rand.Rand, k int) int {
	var ks []int
	for i, t := range s.targets {
		if i != k && t.serves(opPay) && t.proto() == s.targets[k].proto() {
			ks = append(ks, i)
		}
	}
	if len(ks) == 0 {
		return k
	}
	return ks[rng.IntN(len(ks))]
}

// paymentNumbers are what the report says of the payments.
type paymentNumbers struct {
	payments, retried, atOnce int
	replays, inProgress       int // answers, client side
	answered                  int // payments answered 2xx
	applied                   int // payments the book applied (once or more)
}

// paymentCheck compares the client's ledger with the runs that applied
// each payment (applied, by key, from the witness): every payment is
// applied at most once, and exactly once when a send of it was answered
// 2xx. A payment applied once but never answered 2xx is a client that gave
// up (its sends busy past maxSends, or the lock's 409): allowed, its next
// retry would get the stored answer. A payment the book applied that the
// client never sent is a failure too.
func paymentCheck(l *ledger, applied map[string][]write) (check, paymentNumbers) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := paymentNumbers{payments: len(l.pays), retried: int(l.retried.Load()), atOnce: int(l.atOnce.Load())}
	var twice, never, unknown []string
	keys := make([]string, 0, len(l.pays))
	for k := range l.pays {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, runs := l.pays[k], applied[k]
		if p.answered {
			n.answered++
		}
		if len(runs) > 0 {
			n.applied++
		}
		switch {
		case len(runs) > 1:
			by := make([]string, len(runs))
			for i, w := range runs {
				by[i] = fmt.Sprintf("%s (token %d)", w.replica, w.token)
			}
			twice = append(twice, fmt.Sprintf("payment %s of order %s applied %d times: by %v", k, p.order, len(runs), by))
		case p.answered && len(runs) == 0:
			never = append(never, fmt.Sprintf("payment %s of order %s answered 2xx, never applied", k, p.order))
		}
	}
	for k := range applied {
		if l.pays[k] == nil {
			unknown = append(unknown, fmt.Sprintf("payment %q applied, never sent", k))
		}
	}
	slices.Sort(unknown)
	bad := slices.Concat(twice, never, unknown)
	return verdictOf(bad, checkPayments,
		fmt.Sprintf("%d payments (%d sent twice), %d answered 2xx, each applied exactly once; %d applied, none twice",
			n.payments, n.retried, n.answered, n.applied)), n
}

// checkPayments is the check's name in the report (the tests look for it).
const checkPayments = "each payment applied once"
