package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/promtest"
)

// The dashboard over the demo: a real Prometheus scrapes the demo's OTel
// Prometheus exporter (autoexport, configured by the standard environment
// variables) through a contended run with hot orders, which goes on until
// every replica has answered every kind of request testEach times and
// Prometheus has scraped it enough for a rate; every query of the
// dashboard, evaluated at a time inside the run, answers with series of
// the lock names and the labels it groups by and shows; and the hold p50
// panel, over the whole run, agrees with the hold p50 the demo's report
// prints for each busy lock name and kind within a factor 1.5 (the
// histogram's buckets are no wider). Before the demo stops, the test waits
// for a scrape after the load, so Prometheus has every hold the report
// counts.
func TestPrometheusDashboardDemo(t *testing.T) {
	d := loadDashboard(t)
	port, err := promtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.Start(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	// autoexport reads the process's environment.
	noOTel(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", strconv.Itoa(port))
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_LOGS_EXPORTER", "none")

	cfg := testConfig("")
	var at time.Time // inside the run, once scraped enough
	// Enough: scraped a few times, and the last rateInterval holds two
	// scrapes of the lock metrics, so a rate over it answers at that time
	// (on a loaded machine a scrape can time out).
	cfg.hooks.keepGoing = func() bool {
		now := time.Now()
		if ok, _ := prom.Scraped(scrapes, now); !ok {
			return true
		}
		res, err := prom.Query(expand(`sum(rate(lockkit_lock_acquisitions_total[$__rate_interval]))`, ""), now)
		if err != nil || len(res) == 0 {
			return true
		}
		at = now
		return false
	}
	var lastScrape error
	cfg.hooks.loaded = func() { lastScrape = scrapedAfter(prom, time.Now(), 30*time.Second) }
	start := time.Now()
	res, out := runScenario(t, cfg)
	if code := exitCode(res); code != exitOK || at.IsZero() || lastScrape != nil {
		t.Fatalf("demo exit status %d, scraped enough at %v, scraped after the load: %v\n%s", code, at, lastScrape, out)
	}
	checkDashboard(t, prom, at, d)
	checkHoldP50(t, prom, d, out, time.Since(start))
}

// scrapedAfter waits until every target of prom has been scraped after
// since, at most limit.
func scrapedAfter(prom *promtest.Server, since time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		res, err := prom.Query(fmt.Sprintf(`min(timestamp(up{job=%q}))`, promtest.Job), time.Now())
		if err == nil && len(res) == 1 && res[0].Value > float64(since.UnixMilli())/1000 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no scrape after %v within %v (%v, %v)", since.Format(time.RFC3339Nano), limit, res, err)
		}
		time.Sleep(promtest.ScrapeInterval / 4) // polling Prometheus's API, not standing in for an event
	}
}

// checkHoldP50 evaluates the hold p50 panel's query over the whole run for
// each lock name and kind the demo's report prints with at least minHolds
// acquires, and wants it within a factor 1.5 of the report's hold p50.
// Over the whole run: the panel's rate over $__rate_interval becomes the
// buckets' last values within the run (and a margin), which count from
// the process's start (the exporter's counters are cumulative), so the
// same holds as the report's; a rate would miss those before the first
// scrape, and on a loaded machine the first seconds are not the others.
func checkHoldP50(t *testing.T, prom *promtest.Server, d dashboard, report string, run time.Duration) {
	t.Helper()
	const minHolds = 100
	var q query
	for _, c := range d.queries() {
		if strings.HasPrefix(c.expr, "histogram_quantile(0.5,") && strings.Contains(c.expr, "lockkit_lock_hold_duration_seconds_bucket") {
			q = c
		}
	}
	if q.expr == "" {
		t.Fatal("the dashboard has no hold p50 query")
	}
	window := fmt.Sprintf("%ds", int((run + 30*time.Second).Seconds()))
	const rate = "rate(lockkit_lock_hold_duration_seconds_bucket{lockkit_lock_name=~\"$name\"}[$__rate_interval])"
	if !strings.Contains(q.expr, rate) {
		t.Fatalf("the hold p50 query is not a quantile of %s: %s", rate, q.expr)
	}
	whole := strings.ReplaceAll(q.expr, rate, "last_over_time(lockkit_lock_hold_duration_seconds_bucket{lockkit_lock_name=~\"$name\"}["+window+"])")
	rows := reportedNames(t, report)
	compared := 0
	for _, r := range rows {
		if r.acquires < minHolds {
			continue
		}
		expr := expand(whole, promqlRegex(r.name))
		res, err := prom.Query(expr, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		found := false
		for _, s := range res {
			if s.Labels["lockkit_lock_name"] == r.name && s.Labels["lockkit_lock_kind"] == r.kind {
				got, found = s.Value, true
			}
		}
		if !found {
			t.Errorf("%s %s: the hold p50 panel has no series: %v", r.name, r.kind, res)
			continue
		}
		compared++
		ratio := got / r.holdP50.Seconds()
		t.Logf("%s %s: report hold p50 %v, dashboard %.3gms (×%.2f)", r.name, r.kind, r.holdP50, got*1e3, ratio)
		if ratio > 1.5 || ratio < 1/1.5 {
			t.Errorf("%s %s: the dashboard's hold p50 %.3gms is not within ×1.5 of the report's %v", r.name, r.kind, got*1e3, r.holdP50)
		}
	}
	if compared == 0 {
		t.Errorf("no lock name with %d acquires in the report to compare:\n%s", minHolds, report)
	}
}

// reportedName is one row of the report's locks by name and kind.
type reportedName struct {
	name, kind string
	acquires   int
	holdP50    time.Duration
}

// reportedNames reads the report's "locks by name and kind" table, as a
// person would.
func reportedNames(t *testing.T, report string) []reportedName {
	t.Helper()
	_, table, ok := strings.Cut(report, titleNames+"\n")
	if !ok {
		t.Fatalf("the report has no %q:\n%s", titleNames, report)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var rows []reportedName
	for i, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) != 6 { // the header
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("report line %q: %v", line, err)
		}
		hold, err := time.ParseDuration(f[5])
		if err != nil {
			t.Fatalf("report line %q: hold p50: %v", line, err)
		}
		rows = append(rows, reportedName{name: f[0], kind: f[1], acquires: n, holdP50: hold})
	}
	return rows
}
