package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/fence"
)

// result is what one run saw; report prints it.
type result struct {
	cfg      config
	elapsed  time.Duration
	replicas []replicaResult
	keys     []keyResult // every key, most contended first
	names    []nameResult
	payments paymentNumbers
	verdict  verdict
}

// nameResult is one lock name and kind across the replicas: a series of
// the dashboard, as otellock records it.
type nameResult struct {
	nameKind
	acquires     int
	waits, holds []time.Duration // sorted
}

// replicaResult is one replica's share: requests by outcome (client side)
// and its lock Client's Observer numbers (server side).
type replicaResult struct {
	name, proto, addr string
	counts            [nOutcomes]int
	ops               [nOps]int // requests by op
	errors            []string  // the first "other" answers
	// replays and inProgress are the client's count of answers that were
	// a payment's stored answer, or busy because its key ran elsewhere;
	// claims are the replica's idempotency claims by outcome (its
	// Observer: acquired, replayed, contended...).
	replays, inProgress int
	claims              map[core.Outcome]int

	acquires, acquired, notAcquired, contended int
	waits, holds                               []time.Duration // sorted
}

// keyResult is one lock key across the replicas.
type keyResult struct {
	key                 string
	acquires, contended int
	waits               []time.Duration // sorted, of acquires that got it
}

// scenario runs the demo: a Redis (embedded unless cfg.redisURL), the
// replicas on it, cfg.concurrency clients for cfg.duration, then everything
// stopped and closed, and the numbers and the witness's verdict returned.
// Progress goes to out, telemetry warnings to errOut.
func scenario(ctx context.Context, cfg config, out, errOut io.Writer) (_ *result, err error) {
	rdb, err := embedded.Open(ctx, cfg.redisURL)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rdb.Close()) }()
	tel, err := setupTelemetry(ctx, cfg.hooks, out, errOut)
	if err != nil {
		return nil, err
	}
	// Flushing the telemetry is last, and bounded: shutdownGrace past the
	// load (loaded), whatever stopping the rest took. What fails there is a
	// warning, the run's numbers stand.
	var loaded time.Time
	defer func() {
		if loaded.IsZero() {
			loaded = time.Now()
		}
		sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), loaded.Add(shutdownGrace))
		defer cancel()
		cut := tel.Shutdown(sctx)
		if cfg.hooks.flushed != nil {
			cfg.hooks.flushed(cut)
		}
	}()

	// The order book is fenced where a database would be: each order's
	// record is written to Redis through package fence, which refuses an
	// older token (the resource side of the lock's fencing tokens).
	// Without the lock (-nolock) there is no token to fence with: the
	// book is written unfenced, as by a service without locks.
	store := orders.NewStore(cfg.work)
	if !cfg.noLock {
		frdb := rdb.NewClient()
		defer frdb.Close()
		fenced, ferr := fence.NewRedis(frdb, fence.WithKeep(dataKeep))
		if ferr != nil {
			return nil, ferr
		}
		// The records are the demo's data on the Redis (see data.go):
		// removed once the replicas have stopped, whatever ended the run.
		store.Fence(fenced, records)
		defer func() { err = errors.Join(err, removeRecords(context.WithoutCancel(ctx), frdb, store)) }()
	}
	w := newWitness(store)
	reps, err := startReplicas(cfg, rdb, w, tel)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopReplicas(reps)
		}
	}()

	lockMode := "each with its own lock client"
	if cfg.noLock {
		lockMode = "WITHOUT the lock (-nolock)"
	}
	if cfg.noIdem {
		lockMode += ", pay WITHOUT its idempotency (-noidem)"
	}
	fmt.Fprintf(out, "lockkit demo: the orders service as %d replicas (%s), %s,\n", len(reps), strings.Join(replicaNames, ", "), lockMode)
	fmt.Fprintf(out, "locks on %s\n", rdb.Desc)
	addrs := make([]string, len(reps))
	for i, r := range reps {
		addrs[i] = r.name + " " + r.addr
		if r.proto == "http" {
			addrs[i] = r.name + " http://" + r.addr
		}
	}
	fmt.Fprintf(out, "  %s\n", strings.Join(addrs, "   "))
	if cfg.lockView != "" {
		url, stop, err := serveLockViews(cfg.lockView, reps)
		if err != nil {
			return nil, err
		}
		defer stop()
		fmt.Fprintf(out, "live lock view of each replica while it runs: %s (%s/; ?format=json)\n", url, strings.Join(replicaNames, "/, "))
		if cfg.hooks.lockView != nil {
			cfg.hooks.lockView(url)
		}
	}
	traffic := fmt.Sprintf("half the requests to %s, the rest to %s", plural(cfg.hot, "hot order"), plural(cfg.orders, "cold order"))
	if cfg.hot == 0 {
		traffic = "all requests to " + plural(cfg.orders, "order")
	}
	if cfg.each > 0 {
		fmt.Fprintf(out, "%d clients for %v, then until every replica answered every kind of request %d times, over all of them: %s;\n", cfg.concurrency, cfg.duration, cfg.each, traffic)
	} else {
		fmt.Fprintf(out, "%d clients for %v over all of them: %s;\n", cfg.concurrency, cfg.duration, traffic)
	}
	fmt.Fprintf(out, "pay and refund wait up to %v for order:<id>, ship does not wait; each write takes %v;\n", cfg.wait, cfg.work)
	fmt.Fprintf(out, "every payment carries an idempotency key, and 1 in %d is sent again to another replica of its protocol (a client that timed out);\n", retryEvery)
	fmt.Fprintf(out, "a few gRPC streams import line items into the same orders or export them, each holding order:<id> throughout;\nover HTTP a few transfers lock two orders together, tenant exports take one of %d permits, settings reads share and writes exclude\n\n", exportLimit)

	targets := make([]target, len(reps))
	tallies := make([]*tally, len(reps))
	for i, r := range reps {
		tallies[i] = &tally{}
		if r.proto == "grpc" {
			if targets[i], err = newGRPCTarget(r.addr); err != nil {
				return nil, err
			}
		} else {
			targets[i] = newHTTPTarget(r.addr, cfg.concurrency)
		}
		defer targets[i].close()
	}

	res := &result{cfg: cfg}
	pays := newLedger(time.Now())
	res.elapsed = drive(ctx, cfg, targets, tallies, pays, out)
	loaded = time.Now()
	if cfg.hooks.loaded != nil {
		cfg.hooks.loaded()
	}
	if m := missing(cfg.each, targets, tallies); len(m) > 0 {
		return nil, fmt.Errorf("the run ended (%v, %v) before every replica answered every kind of request %d times: %s",
			res.elapsed.Round(time.Millisecond), cmp.Or(context.Cause(ctx), errors.New("at most "+maxDuration.String())), cfg.each, strings.Join(m, ", "))
	}
	for _, t := range targets {
		t.close()
	}
	// Stopping waits for the handlers in flight, so every lease is released
	// (and observed) before the numbers are read.
	stopped = true
	if err := stopReplicas(reps); err != nil {
		return nil, err
	}

	res.replicas, res.keys, res.names = numbers(reps, tallies)
	res.verdict = w.check(replicaNames)
	pc, pn := w.payments(pays)
	res.verdict.checks = append(res.verdict.checks, pc)
	for _, r := range res.replicas {
		pn.replays, pn.inProgress = pn.replays+r.replays, pn.inProgress+r.inProgress
	}
	res.payments = pn
	// Show the tokens of the most contended order (else the most written).
	if len(res.keys) > 0 && res.keys[0].contended > 0 {
		id := strings.TrimPrefix(res.keys[0].key, "order:")
		if t := w.trail(id); len(t) > 0 {
			res.verdict.hottest, res.verdict.trail = id, t
		}
	}
	return res, nil
}

// numbers gathers each replica's requests (its tally) and lock numbers (its
// Observer), and the lock numbers per key across replicas, most contended
// first, and per lock name and kind, most acquired first.
func numbers(reps []*replica, tallies []*tally) ([]replicaResult, []keyResult, []nameResult) {
	var out []replicaResult
	keys := map[string]*keyResult{}
	names := map[nameKind]*nameResult{}
	for i, r := range reps {
		rr := replicaResult{name: r.name, proto: r.proto, addr: r.addr, counts: tallies[i].counts(), ops: tallies[i].opCounts(), errors: tallies[i].errors,
			replays: int(tallies[i].replays.Load()), inProgress: int(tallies[i].inProgress.Load())}
		s := r.stats
		s.mu.Lock()
		rr.claims = maps.Clone(s.claims)
		rr.acquired = s.outcomes[core.OutcomeAcquired]
		rr.notAcquired = s.outcomes[core.OutcomeContended] + s.outcomes[core.OutcomeTimeout]
		for _, n := range s.outcomes {
			rr.acquires += n
		}
		rr.waits, rr.holds = sorted(s.waits), sorted(s.holds)
		for key, ks := range s.keys {
			rr.contended += ks.contended
			k := keys[key]
			if k == nil {
				k = &keyResult{key: key}
				keys[key] = k
			}
			k.acquires += ks.acquires
			k.contended += ks.contended
			k.waits = append(k.waits, ks.waits...)
		}
		for nk, ns := range s.names {
			n := names[nk]
			if n == nil {
				n = &nameResult{nameKind: nk}
				names[nk] = n
			}
			n.acquires += ns.acquires
			n.waits = append(n.waits, ns.waits...)
			n.holds = append(n.holds, ns.holds...)
		}
		s.mu.Unlock()
		out = append(out, rr)
	}
	byKey := make([]keyResult, 0, len(keys))
	for _, k := range keys {
		k.waits = sorted(k.waits)
		byKey = append(byKey, *k)
	}
	slices.SortFunc(byKey, func(a, b keyResult) int {
		return cmp.Or(cmp.Compare(b.contended, a.contended), cmp.Compare(b.acquires, a.acquires), cmp.Compare(a.key, b.key))
	})
	byName := make([]nameResult, 0, len(names))
	for _, n := range names {
		n.waits, n.holds = sorted(n.waits), sorted(n.holds)
		byName = append(byName, *n)
	}
	slices.SortFunc(byName, func(a, b nameResult) int {
		return cmp.Or(cmp.Compare(b.acquires, a.acquires), cmp.Compare(a.name, b.name), cmp.Compare(a.kind, b.kind))
	})
	return out, byKey, byName
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
