package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lockkit/lockkit/examples/internal/promtest"
)

// The dashboard's model, without a Prometheus: datasource and name
// variables, every panel on the datasource variable, every query selecting
// metrics the OTel Prometheus exporter really serves (gathered from one fed
// every lockkit event), each selector filtered by the name variable, and
// every lockkit metric on some panel.
func TestPrometheusDashboardModel(t *testing.T) {
	d := loadDashboard(t)
	fams := startLockSource(t).gather(t)
	k := knownFrom(fams)

	if v, ok := d.variable("DS_PROMETHEUS"); !ok || v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("no datasource variable DS_PROMETHEUS over Prometheus datasources: %+v", v)
	}
	v, ok := d.variable("name")
	if !ok || v.Type != "query" || v.Datasource.UID != dsUID || v.AllValue != ".*" {
		t.Errorf("name variable: want a query variable on %s with All = .*, got %+v", dsUID, v)
	}
	if metric, label, err := v.nameQuery(); err != nil {
		t.Error(err)
	} else if !k[metric][label] {
		t.Errorf("name variable: the exporter serves no %s with a label %s", metric, label)
	}

	ids := map[int]bool{}
	selected := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != dsUID || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != dsUID || tg.RefID == "" {
				t.Errorf("panel %q target %q: datasource %+v", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
	for _, q := range d.queries() {
		for _, e := range checkStatic(q.expr, k) {
			t.Errorf("%s: %s\n\t%s", q, e, q.expr)
		}
		for _, m := range metricsOf(q.expr) {
			selected[m] = true
		}
	}
	for _, f := range fams {
		name := f.GetName()
		if f.GetType() == dto.MetricType_HISTOGRAM {
			name += "_bucket"
		}
		if strings.HasPrefix(name, "lockkit_lock_") && !selected[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// gather is what the source's exporter serves now.
func (s *lockSource) gather(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	fams, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// scrapes is how many successful scrapes of a target the tests wait for
// before they evaluate: enough for a rate over rateInterval.
const scrapes = 4

// Every query of the dashboard, through a real Prometheus scraping the
// lock source (every lockkit metric, losses and fail-open runs included),
// answers with series of the labels it groups by; and the checks catch a
// dashboard query that is wrong.
func TestPrometheusDashboardLockSource(t *testing.T) {
	d := loadDashboard(t)
	src := startLockSource(t)
	prom := promtest.Start(t, src.addr)
	at := prom.WaitScrapes(t, scrapes, 30*time.Second, nil)
	checkDashboard(t, prom, at, d)

	// The checks can fail: each of these queries is broken as a dashboard
	// query can be, and one of the checks says so.
	k := knownFrom(src.gather(t))
	const good = `sum by (lockkit_lock_name, lockkit_lock_outcome) (rate(lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}[$__rate_interval]))`
	for _, tc := range []struct {
		name, expr, static, live string // what each check's error must contain; "" = no error
		legend                   string
	}{
		{"good", good, "", "", "{{lockkit_lock_name}} {{lockkit_lock_outcome}}"},
		{"metric name guessed from the OTel name",
			`histogram_quantile(0.99, sum by (lockkit_lock_name, le) (rate(lockkit_lock_acquire_duration_bucket{lockkit_lock_name=~"$name"}[$__rate_interval])))`,
			"no such metric", "no series", ""},
		{"counter without _total",
			`sum by (lockkit_lock_name) (rate(lockkit_lock_contentions{lockkit_lock_name=~"$name"}[$__rate_interval]))`,
			"no such metric", "no series", ""},
		{"OTel attribute name as the label",
			`sum by (name) (rate(lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}[$__rate_interval]))`,
			"by (name)", "has no lockkit_lock_name", ""},
		{"outcome label misnamed",
			`sum by (lockkit_lock_name, outcome) (rate(lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}[$__rate_interval]))`,
			"by (outcome)", "has no outcome", ""},
		{"name variable ignored",
			`sum by (lockkit_lock_name) (lockkit_lock_held)`,
			"neither a selector", "the name variable was", ""},
		{"misspelled metric behind a zero fallback",
			`sum by (lockkit_lock_name, error_type) (increase(lockkit_lock_loses_total{lockkit_lock_name=~"$name"}[$__rate_interval])) or on (lockkit_lock_name) label_replace(0 * sum by (lockkit_lock_name) (lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}), "error_type", "lost", "", "")`,
			"no such metric", "", ""}, // the zeros answer: only the static check sees it
		{"zero fallback without the legend's label (a blank legend)",
			`sum by (lockkit_lock_name, lockkit_lock_outcome) (rate(lockkit_lock_renewals_total{lockkit_lock_name=~"$name"}[$__rate_interval])) or on (lockkit_lock_name) (0 * sum by (lockkit_lock_name) (lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}))`,
			"", "has no lockkit_lock_outcome", "{{lockkit_lock_name}} {{lockkit_lock_outcome}}"},
		{"legend of a label the query drops",
			`sum by (lockkit_lock_name) (rate(lockkit_lock_acquisitions_total{lockkit_lock_name=~"$name"}[$__rate_interval]))`,
			"", "which the legend shows", "{{lockkit_lock_name}} {{lockkit_lock_outcome}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			static := strings.Join(checkStatic(tc.expr, k), "; ")
			q := query{expr: tc.expr, legend: tc.legend}
			live := strings.Join(append(checkLive(prom, q, at, ".*", ""),
				checkLive(prom, q, at, promqlRegex(sourceName), sourceName)...), "; ")
			for _, c := range []struct{ check, got, want string }{{"static", static, tc.static}, {"live", live, tc.live}} {
				switch {
				case c.want == "" && c.got != "":
					t.Errorf("%s check: unexpected errors: %s", c.check, c.got)
				case c.want != "" && !strings.Contains(c.got, c.want):
					t.Errorf("%s check: want an error with %q, got %q", c.check, c.want, c.got)
				}
			}
		})
	}
}

// checkDashboard evaluates every query of d at time at: with the name
// variable on All, and on the most contended lock name alone. The name
// variable's own query must list lock names.
func checkDashboard(t *testing.T, prom *promtest.Server, at time.Time, d dashboard) {
	t.Helper()
	v, _ := d.variable("name")
	metric, label, err := v.nameQuery()
	if err != nil {
		t.Fatal(err)
	}
	names, err := prom.LabelValues(label, metric)
	if err != nil || len(names) < 2 {
		t.Fatalf("name variable %s: values %q, %v; want the lock names", v.Definition, names, err)
	}
	res, err := prom.Query(`topk(1, sum by (lockkit_lock_name) (increase(lockkit_lock_contentions_total[1m])))`, at)
	if err != nil || len(res) != 1 {
		t.Fatalf("the most contended lock: %v, %v", res, err)
	}
	hottest := res[0].Labels["lockkit_lock_name"]
	if !slices.Contains(names, hottest) {
		t.Errorf("the name variable's values %q lack the most contended lock %q", names, hottest)
	}
	t.Logf("lock names %q; most contended %q; evaluating at %s", names, hottest, at.Format(time.RFC3339Nano))
	for _, q := range d.queries() {
		for _, e := range checkLive(prom, q, at, ".*", "") {
			t.Errorf("%s, name All: %s\n\t%s", q, e, q.expr)
		}
		for _, e := range checkLive(prom, q, at, promqlRegex(hottest), hottest) {
			t.Errorf("%s, name %q: %s\n\t%s", q, hottest, e, q.expr)
		}
	}
	if testing.Verbose() {
		for _, q := range d.queries() {
			res, _ := prom.Query(expand(q.expr, ".*"), at)
			t.Logf("%s: %s", q, summary(res))
		}
	}
}

// summary is one line per series: its distinguishing labels and value.
func summary(res []promtest.Sample) string {
	var b strings.Builder
	for _, s := range res {
		fmt.Fprintf(&b, "\n\t%s %s %s = %.4g", s.Labels["lockkit_lock_name"], s.Labels["lockkit_lock_outcome"], s.Labels["error_type"], s.Value)
	}
	return b.String()
}
