package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lockkit/lockkit/examples/internal/promtest"
)

// dashboardFile is the Grafana dashboard the tests check.
const dashboardFile = "../dashboards/lockkit.json"

// dashboard is the part of a Grafana dashboard's JSON model the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int        `json:"id"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		RefID        string     `json:"refId"`
		Expr         string     `json:"expr"`
		LegendFormat string     `json:"legendFormat"`
		Datasource   datasource `json:"datasource"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	Query      any        `json:"query"` // a string, or the Prometheus editor's object
	Definition string     `json:"definition"`
	Datasource datasource `json:"datasource"`
	AllValue   string     `json:"allValue"`
}

// dsUID is how every panel and the name variable name their datasource:
// the datasource variable, so the dashboard imports into any Grafana.
const dsUID = "${DS_PROMETHEUS}"

// query is one panel target's expression and legend.
type query struct{ panel, ref, expr, legend string }

func (q query) String() string { return q.panel + "/" + q.ref }

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func (d dashboard) queries() []query {
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{panel: p.Title, ref: tg.RefID, expr: tg.Expr, legend: tg.LegendFormat})
		}
	}
	return qs
}

func (d dashboard) variable(name string) (variable, bool) {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v, true
		}
	}
	return variable{}, false
}

// labelValuesRE is Grafana's label_values(metric, label) variable query.
var labelValuesRE = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// nameQuery returns the metric and label of the name variable's query.
func (v variable) nameQuery() (metric, label string, err error) {
	q := v.Definition
	switch vq := v.Query.(type) {
	case string:
		q = vq
	case map[string]any:
		if s, ok := vq["query"].(string); ok {
			q = s
		}
	}
	m := labelValuesRE.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", "", fmt.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q)
	}
	return m[1], m[2], nil
}

// rateInterval is what $__rate_interval stands for in the tests: Grafana's
// is at least four scrape intervals; one more keeps a sample's jitter from
// leaving a window with fewer than two samples.
const rateInterval = "5s"

// expand substitutes the dashboard's variables as Grafana would: name is a
// regular expression (".*" for All).
func expand(expr, name string) string {
	expr = strings.ReplaceAll(expr, "$__rate_interval", rateInterval)
	expr = strings.ReplaceAll(expr, "${name}", name)
	return strings.ReplaceAll(expr, "$name", name)
}

// promqlRegex is a lock name as one value of the name variable: a regular
// expression matching exactly it, escaped for a PromQL string.
func promqlRegex(name string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(name), `\`, `\\`)
}

// known is what a real exporter served: metric name → its label names.
type known map[string]map[string]bool

// knownFrom lists gathered metric families as Prometheus stores them: a
// histogram as _bucket (with le), _sum and _count.
func knownFrom(fams []*dto.MetricFamily) known {
	k := known{}
	add := func(name string, labels map[string]bool, extra ...string) {
		set := k[name]
		if set == nil {
			set = map[string]bool{}
			k[name] = set
		}
		for l := range labels {
			set[l] = true
		}
		for _, l := range extra {
			set[l] = true
		}
	}
	for _, f := range fams {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			add(f.GetName()+"_bucket", labels, "le")
			add(f.GetName()+"_sum", labels)
			add(f.GetName()+"_count", labels)
			continue
		}
		add(f.GetName(), labels)
	}
	return k
}

var (
	// lockkitToken is a metric or label name of lockkit's, with what follows it.
	lockkitToken = regexp.MustCompile(`\b(lockkit_lock_[a-zA-Z0-9_]+)(\{[^}]*\})?`)
	// byClause is an aggregation's grouping labels.
	byClause = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
)

// nameMatcher is the one matcher every selector of the dashboard has.
const nameMatcher = `{lockkit_lock_name=~"$name"}`

// metricsOf returns the metric names an expression selects.
func metricsOf(expr string) []string {
	var ms []string
	for _, m := range lockkitToken.FindAllStringSubmatch(expr, -1) {
		if m[2] != "" && !slices.Contains(ms, m[1]) {
			ms = append(ms, m[1])
		}
	}
	return ms
}

// grouping returns the labels of every by (...) in expr, le left out (a
// quantile consumes it).
func grouping(expr string) []string {
	var ls []string
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && l != "le" && !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
	}
	return ls
}

// legendLabel is a {{label}} of a legend format.
var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// legendLabels are the labels q's legend shows.
func (q query) legendLabels() []string {
	var ls []string
	for _, m := range legendLabel.FindAllStringSubmatch(q.legend, -1) {
		ls = append(ls, m[1])
	}
	return ls
}

// checkStatic checks an expression without a Prometheus: every selector
// is a metric the exporter served, filtered by the name variable and
// nothing else; every other lockkit token is a label it served; every
// grouping label is one of the selected metrics' labels.
func checkStatic(expr string, k known) []string {
	var errs []string
	labels := map[string]bool{}
	selectors := 0
	for _, m := range lockkitToken.FindAllStringSubmatch(expr, -1) {
		name, matchers := m[1], m[2]
		if matchers == "" {
			continue
		}
		selectors++
		ls, ok := k[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("metric %s: the exporter serves no such metric", name))
		}
		for l := range ls {
			labels[l] = true
		}
		if matchers != nameMatcher {
			errs = append(errs, fmt.Sprintf("selector %s%s: want exactly %s", name, matchers, nameMatcher))
		}
	}
	if selectors == 0 {
		errs = append(errs, "no lockkit metric selected")
	}
	for _, m := range lockkitToken.FindAllStringSubmatch(expr, -1) {
		if m[2] == "" && !labels[m[1]] {
			errs = append(errs, fmt.Sprintf("%s: neither a selector with %s nor a label of the selected metrics", m[1], nameMatcher))
		}
	}
	for _, l := range grouping(expr) {
		if !labels[l] {
			errs = append(errs, fmt.Sprintf("by (%s): no selected metric has that label", l))
		}
	}
	return errs
}

// checkLive evaluates q at time at, the name variable set to nameRE,
// and checks the answer: at least one series, each with a lock name
// (matching name when it is not empty), every label it groups by and
// every label its legend shows (a zero fallback's series too: a series
// without one is a blank in the legend); at least one value a number.
func checkLive(prom *promtest.Server, q query, at time.Time, nameRE, name string) []string {
	expr := expand(q.expr, nameRE)
	res, err := prom.Query(expr, at)
	if err != nil {
		return []string{err.Error()}
	}
	if len(res) == 0 {
		return []string{fmt.Sprintf("no series for %s", expr)}
	}
	var errs []string
	finite := false
	for _, s := range res {
		n, ok := s.Labels["lockkit_lock_name"]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("series %v has no lockkit_lock_name", s.Labels))
		case name != "" && n != name:
			errs = append(errs, fmt.Sprintf("series %v: the name variable was %q", s.Labels, name))
		}
		for _, l := range grouping(q.expr) {
			if _, ok := s.Labels[l]; !ok {
				errs = append(errs, fmt.Sprintf("series %v has no %s, which the query groups by", s.Labels, l))
			}
		}
		for _, l := range q.legendLabels() {
			if _, ok := s.Labels[l]; !ok {
				errs = append(errs, fmt.Sprintf("series %v has no %s, which the legend shows", s.Labels, l))
			}
		}
		if !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
			finite = true
		}
	}
	if !finite {
		errs = append(errs, fmt.Sprintf("every value is NaN or infinite: %v", res))
	}
	return errs
}
