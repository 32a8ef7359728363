package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Section titles of the report (the tests look for them).
const (
	titleRequests = "requests, by replica and outcome (client side)"
	titleLocks    = "locks, from the Observer on each replica's lock client"
	titleNames    = "locks by name and kind, all replicas (the dashboard's series)"
	titleKeys     = "hottest keys (acquires that found the lock held by another request)"
	titleTokens   = "fencing tokens of"
	titleWitness  = "witness (counted inside the handlers, checked against the order book)"
)

// report prints res for a person to read at a glance.
func report(out io.Writer, res *result) {
	fmt.Fprintf(out, "\n%s\n", titleRequests)
	fmt.Fprintf(out, "  %-12s %9s %7s %6s %8s %6s\n", "replica", "requests", "ok", "busy", "refused", "other")
	var all [nOutcomes]int
	for _, r := range res.replicas {
		c := r.counts
		fmt.Fprintf(out, "  %-12s %9d %7d %6d %8d %6d\n", r.name+" ("+protoName(r.proto)+")", sum(c), c[outOK], c[outBusy], c[outRefused], c[outOther])
		for i, v := range c {
			all[i] += v
		}
	}
	fmt.Fprintf(out, "  %-12s %9d %7d %6d %8d %6d\n", "all", sum(all), all[outOK], all[outBusy], all[outRefused], all[outOther])
	for _, r := range res.replicas {
		if r.ops[opImport]+r.ops[opExport] > 0 {
			fmt.Fprintf(out, "  streams among %s's requests: %d ImportLines, %d ExportLines, each holding order:<id> from its first message to its end\n",
				r.name, r.ops[opImport], r.ops[opExport])
		}
	}
	if p := res.payments; p.payments > 0 {
		claimed, replayed := 0, 0
		for _, r := range res.replicas {
			claimed, replayed = claimed+r.claims[core.OutcomeAcquired], replayed+r.claims[core.OutcomeReplayed]
		}
		fmt.Fprintf(out, "  payments: %d, each with its own idempotency key; %d sent again to another replica (%d at once, %d after the answer),\n",
			p.payments, p.retried, p.atOnce, p.retried-p.atOnce)
		fmt.Fprintf(out, "  %d replays (the stored answer, %s: true), %d in progress (busy while the key ran elsewhere, sent again after Retry-After);\n",
			p.replays, guard.HeaderIdempotentReplayed, p.inProgress)
		fmt.Fprintf(out, "  the replicas' Observers: %d records claimed, %d replayed\n", claimed, replayed)
	}
	var ops [nOps]int
	for _, r := range res.replicas {
		for i, v := range r.ops {
			ops[i] += v
		}
	}
	if ops[opTransfer]+ops[opTenantExport]+ops[opSettingsGet]+ops[opSettingsPut] > 0 {
		fmt.Fprintf(out, "  over HTTP also: %d transfers (order:<id> and order:<to> together), %d tenant exports (at most %d at once per tenant),\n",
			ops[opTransfer], ops[opTenantExport], exportLimit)
		fmt.Fprintf(out, "  %d settings reads (side by side) and %d settings writes (alone)\n", ops[opSettingsGet], ops[opSettingsPut])
	}
	fmt.Fprintf(out, "  busy: the order's lock was held (ship never waits; pay and refund past %v): HTTP 409 + Retry-After, gRPC Aborted;\n", res.cfg.wait)
	fmt.Fprintln(out, "        or every export permit of the tenant was held past it: HTTP 429 + Retry-After; or a payment's key ran elsewhere (in progress)")
	fmt.Fprintln(out, "  refused: the order's rules said no (refund above the balance, unpaid, already shipped): HTTP 409, gRPC FailedPrecondition")
	for _, r := range res.replicas {
		for _, e := range r.errors {
			fmt.Fprintf(out, "  other (%s): %s\n", r.name, oneLine(e))
		}
	}

	fmt.Fprintf(out, "\n%s\n", titleLocks)
	fmt.Fprintf(out, "  %-8s %9s %9s %13s %11s %9s %8s %8s %9s\n", "replica", "acquires", "acquired", "not acquired", "found held", "wait p50", "p99", "max", "hold p50")
	for _, r := range res.replicas {
		fmt.Fprintf(out, "  %-8s %9d %9d %13d %11d %9s %8s %8s %9s\n", r.name, r.acquires, r.acquired, r.notAcquired, r.contended,
			ms(quantile(r.waits, .5)), ms(quantile(r.waits, .99)), ms(quantile(r.waits, 1)), ms(quantile(r.holds, .5)))
	}
	fmt.Fprintln(out, "  wait: acquire start to lock held (AcquireEnd's Waited); hold: lock held to released (Released's Held);")
	fmt.Fprintln(out, "  found held: acquires that found another request holding the order (on any replica)")

	fmt.Fprintf(out, "\n%s\n", titleNames)
	fmt.Fprintf(out, "  %-30s %-9s %9s %9s %8s %9s\n", "name", "kind", "acquires", "wait p50", "p99", "hold p50")
	for _, n := range res.names {
		fmt.Fprintf(out, "  %-30s %-9s %9d %9s %8s %9s\n", n.name, n.kind, n.acquires,
			ms(quantile(n.waits, .5)), ms(quantile(n.waits, .99)), ms(quantile(n.holds, .5)))
	}

	fmt.Fprintf(out, "\n%s\n", titleKeys)
	shown := 0
	for _, k := range res.keys {
		if shown == 5 || k.contended == 0 {
			break
		}
		shown++
		fmt.Fprintf(out, "  %-12s %5d of %-5d  wait p50 %-7s p99 %-7s max %s\n", k.key, k.contended, k.acquires,
			ms(quantile(k.waits, .5)), ms(quantile(k.waits, .99)), ms(quantile(k.waits, 1)))
	}
	if shown == 0 {
		fmt.Fprintln(out, "  (no acquire found a lock held)")
	}

	v := res.verdict
	fmt.Fprintf(out, "\n%s order:%s, in write order (%d writes: %s)\n", titleTokens, v.hottest, len(v.trail), byReplica(replicaNames, writesBy(v.trail)))
	printTrail(out, v.trail)
	fmt.Fprintln(out, "  each write carried the token of the lock it held; the order book refuses one older than its last")

	fmt.Fprintf(out, "\n%s\n", titleWitness)
	for _, c := range v.checks {
		mark := "ok  "
		if !c.ok {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "  %s  %s: %s\n", mark, c.what, c.detail)
	}
	if v.holds() {
		fmt.Fprintf(out, "the witness holds (%d requests in %.1fs): exit status 0\n", sum(all), res.elapsed.Seconds())
	} else {
		fmt.Fprintf(out, "THE WITNESS FAILED: exit status %d\n", exitWitness)
	}
}

func protoName(p string) string {
	if p == "grpc" {
		return "gRPC"
	}
	return "HTTP"
}

func writesBy(t []write) map[string]int {
	n := map[string]int{}
	for _, w := range t {
		n[w.replica]++
	}
	return n
}

// printTrail prints the first 8 and the last 4 writes of a trail, four to a
// line: each is the token the write carried and the replica that made it.
func printTrail(out io.Writer, t []write) {
	const head, tail, perLine = 8, 4, 4
	line := func(ws []write) {
		var b strings.Builder
		b.WriteString(" ")
		for _, w := range ws {
			fmt.Fprintf(&b, " %d %-5s", w.token, w.replica)
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	chunk := func(ws []write) {
		for len(ws) > 0 {
			n := min(perLine, len(ws))
			line(ws[:n])
			ws = ws[n:]
		}
	}
	if len(t) <= head+tail {
		chunk(t)
		return
	}
	chunk(t[:head])
	fmt.Fprintf(out, "  ... %d more ...\n", len(t)-head-tail)
	chunk(t[len(t)-tail:])
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
