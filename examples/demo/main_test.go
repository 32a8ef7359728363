package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
)

// TestMain is the program itself when MainHidesSecrets runs it.
func TestMain(m *testing.M) {
	exampletest.AsMain(main)
	goleak.VerifyTestMain(m, exampletest.FasthttpGoroutines...) // the fiber replica's server
}

// testEach is how many times a test run has every replica answer every
// kind of request it serves: the run lasts until then, however long a
// loaded machine takes (runScenario's timeout bounds it), not a fixed
// duration that a loaded machine fills with fewer requests.
const testEach = 3

// testConfig is a short run: 8 clients, one hot order (so four of them queue
// for it at any time), 20 cold ones, until every replica has answered
// every kind of request testEach times.
func testConfig(redisURL string) config {
	return config{
		duration: 200 * time.Millisecond, each: testEach, concurrency: 8, orders: 20, hot: 1,
		work: 2 * time.Millisecond, wait: 5 * time.Second, redisURL: redisURL,
	}
}

// runScenario runs the demo's scenario and its report in-process.
func runScenario(t *testing.T, cfg config) (*result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := scenario(ctx, cfg, &out, &errOut)
	out.WriteString(errOut.String())
	if err != nil {
		t.Fatalf("scenario: %v\n%s", err, out.String())
	}
	report(&out, res)
	return res, out.String()
}

// checkHolds asserts a locked run: the witness holds (exit status 0), the
// report has every section, every replica served writes, imports and
// exports ran (the gRPC replica's streams), the hot order was contended
// across replicas, and its tokens strictly increase.
func checkHolds(t *testing.T, res *result, out string) {
	t.Helper()
	if code := exitCode(res); code != exitOK || !res.verdict.holds() {
		t.Errorf("exit status %d, witness:\n%s", code, out)
	}
	for _, s := range []string{titleRequests, titleLocks, titleKeys, titleTokens + " order:h1", titleWitness, "ok    " + checkStreams, "ok    " + checkPayments, "the witness holds", "done"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report has no %q:\n%s", s, out)
		}
	}
	for _, r := range res.replicas {
		if r.counts[outOK] == 0 || r.acquired == 0 || len(r.waits) != r.acquired || len(r.holds) != r.acquired {
			t.Errorf("replica %s: %d ok, %d acquired, %d waits and %d holds observed", r.name, r.counts[outOK], r.acquired, len(r.waits), len(r.holds))
		}
		if r.counts[outOther] != 0 {
			t.Errorf("replica %s: %d unexpected answers: %v", r.name, r.counts[outOther], r.errors)
		}
	}
	if v := res.verdict; v.imports == 0 || v.lines < 2*v.imports || v.exports == 0 {
		t.Errorf("streams: %d imports of %d lines, %d exports", v.imports, v.lines, v.exports)
	}
	// Two independent counts agree: every lease acquired ran one critical
	// section (a stream is one; a transfer is one on each of its two
	// orders, under one lease each; a tenant export, settings read or
	// write is one), every 200 / OK answer is one write the witness
	// recorded (an import is one, a transfer two), one export, or one
	// tenant operation; a payment's replay is none (its stored answer, no
	// lock taken).
	acquired, ok := 0, 0
	for _, r := range res.replicas {
		acquired, ok = acquired+r.acquired, ok+r.counts[outOK]-r.replays
	}
	if v := res.verdict; acquired != v.entered+v.tenantEntered || ok != v.writes-v.transfers+v.exports+v.tenantOK {
		t.Errorf("%d leases acquired, %d+%d critical sections entered; %d ok answers, %d writes (%d transfers), %d exports and %d tenant operations recorded",
			acquired, v.entered, v.tenantEntered, ok, v.writes, v.transfers, v.exports, v.tenantOK)
	}
	checkReplays(t, res, out)
	if len(res.keys) == 0 || res.keys[0].key != "order:h1" || res.keys[0].contended == 0 {
		t.Errorf("no contention on the hot order: %+v", res.keys[:min(len(res.keys), 2)])
	}
	trail, by := res.verdict.trail, map[string]int{}
	for i, w := range trail {
		by[w.replica]++
		if i > 0 && w.token <= trail[i-1].token {
			t.Fatalf("tokens of order:h1 not increasing at write %d: %d then %d", i+1, trail[i-1].token, w.token)
		}
	}
	if len(by) != len(replicaNames) {
		t.Errorf("the hot order was written by %v: all %d replicas should share it", by, len(replicaNames))
	}
}

// The demo on its embedded miniredis.
func TestScenarioEmbedded(t *testing.T) {
	res, out := runScenario(t, testConfig(""))
	if !strings.Contains(out, "embedded miniredis") {
		t.Errorf("not on the embedded Redis:\n%s", out)
	}
	checkHolds(t, res, out)
	t.Log("\n" + out)
}

// The same binary on a real redis-server gives the same kind of report.
func TestScenarioRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	res, out := runScenario(t, testConfig("redis://"+srv.Addr()+"/0"))
	if !strings.Contains(out, "redis at "+srv.Addr()) {
		t.Errorf("not on %s:\n%s", srv.Addr(), out)
	}
	checkHolds(t, res, out)
}

// The same binary on a Redis Cluster of 3 masters with a replica each,
// named as a deployment names it: REDIS_URL in go-redis's cluster form. The
// witness holds as on one server (its locks now on shard channels, spread
// over the masters).
func TestScenarioCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	env := func(k string) string { return map[string]string{embedded.EnvURL: url}[k] }
	flags, err := parse(nil, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(flags.redisURL)
	res, out := runScenario(t, cfg)
	if !strings.Contains(out, "locks on Redis Cluster through "+c.Nodes[0].Addr()) {
		t.Errorf("not on the cluster:\n%s", out)
	}
	checkHolds(t, res, out)
	// The locks were spread over the masters, as the cluster client
	// routes them: each holds some of the order locks' fencing state.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range c.Masters() {
		keys, err := m.Client.Keys(ctx, "lockkit:v1:k:order:*").Result()
		if err != nil || len(keys) == 0 {
			t.Errorf("master %s holds no lock keys: %v", m.Addr(), err)
		}
	}
}

// checkReplays asserts the retried payments of a run with idempotency:
// every replica got retries (-each counts them), the client saw replays,
// as many as the replicas' Observers counted records replayed (two
// independent counts), at most one per retry, and the report says so.
func checkReplays(t *testing.T, res *result, out string) {
	t.Helper()
	p, observed := res.payments, 0
	for _, r := range res.replicas {
		observed += r.claims[core.OutcomeReplayed]
	}
	if p.retried < testEach*len(replicaNames) || p.replays == 0 || p.replays != observed || p.replays > p.retried {
		t.Errorf("%d payments retried, %d replays seen by the client, %d by the Observers", p.retried, p.replays, observed)
	}
	if want := fmt.Sprintf("%d replays (the stored answer", p.replays); !strings.Contains(out, want) {
		t.Errorf("the report has no %q:\n%s", want, out)
	}
}

// Without the lock the same traffic breaks the order book, the witness sees
// it and the exit status says so: the witness can fail, its stream check
// too (payments of the hot order run inside its imports).
func TestNoLockFailsTheWitness(t *testing.T) {
	cfg := testConfig("")
	cfg.noLock = true
	res, out := runScenario(t, cfg)
	if code := exitCode(res); code != exitWitness || res.verdict.holds() {
		t.Fatalf("exit status %d without the lock:\n%s", code, out)
	}
	failed := map[string]bool{}
	for _, c := range res.verdict.checks {
		failed[c.what] = !c.ok
	}
	// -nolock removes locks only: a payment still runs once per key.
	if !failed["no overlapping holders"] || !failed["no stale-token write accepted"] || !failed[checkStreams] || failed["every replica wrote"] || failed[checkPayments] {
		t.Errorf("failed checks %v:\n%s", failed, out)
	}
	if !strings.Contains(out, "THE WITNESS FAILED") || !strings.Contains(out, "WITHOUT the lock") {
		t.Errorf("report:\n%s", out)
	}
}

// Without pay's idempotency (-noidem) the retried payments run again: the
// witness's per-payment ledger sees a payment applied twice and fails,
// while the lock still keeps every other promise; no answer is a replay.
func TestNoIdempotencyFailsTheWitness(t *testing.T) {
	cfg := testConfig("")
	cfg.noIdem = true
	res, out := runScenario(t, cfg)
	if code := exitCode(res); code != exitWitness || res.verdict.holds() {
		t.Fatalf("exit status %d without idempotency:\n%s", code, out)
	}
	for _, c := range res.verdict.checks {
		if c.ok == (c.what == checkPayments) {
			t.Errorf("check %q ok=%v: %s", c.what, c.ok, c.detail)
		}
	}
	if !strings.Contains(out, "FAIL  "+checkPayments+": payment pay-") || !strings.Contains(out, "applied 2 times") || !strings.Contains(out, "WITHOUT its idempotency") {
		t.Errorf("report:\n%s", out)
	}
	if p := res.payments; p.replays != 0 || p.inProgress != 0 || p.retried == 0 {
		t.Errorf("without idempotency: %d retried, %d replays, %d in progress", p.retried, p.replays, p.inProgress)
	}
}

// run's exit statuses for what is not a run: help, bad flags, a Redis that
// is not there.
func TestRunErrors(t *testing.T) {
	srv := redistest.Start(t)
	dead := "redis://" + srv.Addr()
	srv.Kill()
	env := func(k string) string { return map[string]string{embedded.EnvURL: dead}[k] }
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{[]string{"-h"}, exitOK, "usage: demo"},
		{[]string{"-nope"}, exitError, "flag provided but not defined"},
		{[]string{"-duration", "0s"}, exitError, "-duration must be"},
		{[]string{"-concurrency", "0"}, exitError, "-concurrency must be"},
		{[]string{"-each", "-1"}, exitError, "-each must be"},
		{[]string{"-wait", "-1s"}, exitError, "-wait must be"},
		{[]string{"extra"}, exitError, "unexpected arguments"},
		{[]string{"-duration", "1s"}, exitError, "cannot reach the Redis at " + srv.Addr() + " named by REDIS_URL"}, // from env
		{[]string{"-redis", "http://nope"}, exitError, "REDIS_URL"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), tc.args, env, &out, &errOut); code != tc.want || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("run %v = %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.want, tc.err)
		}
	}
}

func TestParse(t *testing.T) {
	env := func(k string) string {
		return map[string]string{embedded.EnvURL: "redis://r:1"}[k]
	}
	cfg, err := parse(nil, env, &bytes.Buffer{})
	if err != nil || cfg.redisURL != "redis://r:1" || cfg.duration != 5*time.Second || cfg.noLock {
		t.Fatalf("defaults from env: %+v %v", cfg, err)
	}
	cfg, err = parse([]string{"-redis", "redis://x:2", "-nolock", "-hot", "0"}, env, &bytes.Buffer{})
	if err != nil || cfg.redisURL != "redis://x:2" || !cfg.noLock || cfg.hot != 0 {
		t.Fatalf("flags over env: %+v %v", cfg, err)
	}
	if cfg, err = parse([]string{"-redis", ""}, env, &bytes.Buffer{}); err != nil || cfg.redisURL != "" {
		t.Fatalf("-redis \"\" (the embedded miniredis) over env: %+v %v", cfg, err)
	}
}

// The report observer counts what the engine tells it, through
// core.Observers (which chains the contexts: each observer finds its own
// mark), the same in each of two observers.
func TestObserverThroughFanOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := newLockStats(), newLockStats()
	c, err := core.New(r.Client, core.WithObserver(core.Observers(a, b)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "order:1", core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second acquire: %v", err)
	}
	if _, err := c.Acquire(ctx, "order:1", core.Wait(200*time.Millisecond)); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("third acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*lockStats{a, b} {
		s.mu.Lock()
		k := s.keys["order:1"]
		if k == nil || k.acquires != 3 || k.contended != 2 || len(s.waits) != 1 || len(s.holds) != 1 ||
			s.outcomes[core.OutcomeAcquired] != 1 || s.outcomes[core.OutcomeContended] != 1 || s.outcomes[core.OutcomeTimeout] != 1 {
			t.Errorf("observed %+v %+v waits %v holds %v", k, s.outcomes, s.waits, s.holds)
		}
		s.mu.Unlock()
	}
}

// -h lists the flags with their defaults; the -redis default must not be
// REDIS_URL's value, which may carry a password.
func TestHelpHidesRedisURL(t *testing.T) {
	env := func(k string) string {
		return map[string]string{embedded.EnvURL: "redis://alice:hunterA@127.0.0.1:6379/0"}[k]
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, env, &out, &errOut); code != exitOK || !strings.Contains(errOut.String(), "-redis") {
		t.Fatalf("-h: %d %s", code, errOut.String())
	}
	if s := out.String() + errOut.String(); strings.Contains(s, "hunter") || strings.Contains(s, "alice") {
		t.Errorf("-h shows REDIS_URL's userinfo:\n%s", s)
	}
}
