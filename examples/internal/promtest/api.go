package promtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// Sample is one series of an instant query's answer.
type Sample struct {
	Labels map[string]string
	Value  float64 // NaN when Prometheus answered NaN (a quantile over no data)
}

// Target is one scrape target as /api/v1/targets reports it.
type Target struct {
	ScrapeURL  string    `json:"scrapeUrl"`
	Health     string    `json:"health"` // "up", "down" or "unknown"
	LastError  string    `json:"lastError"`
	LastScrape time.Time `json:"lastScrape"`
}

// get calls the HTTP API and decodes its data field into data.
func (s *Server) get(path string, q url.Values, data any) error {
	ctx, cancel := ctx()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("promtest: %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("promtest: %s %s: %s: %s", path, q.Encode(), env.ErrorType, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// Query evaluates expr at time at (/api/v1/query). The answer must be an
// instant vector.
func (s *Server) Query(expr string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := s.get("/api/v1/query", q, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("promtest: %q is a %s, not an instant vector", expr, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			v = math.NaN()
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// Targets is the active scrape targets.
func (s *Server) Targets() ([]Target, error) {
	var data struct {
		Active []Target `json:"activeTargets"`
	}
	if err := s.get("/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, err
	}
	return data.Active, nil
}

// LabelValues is the values label takes in the series matching match (a
// series selector; "" for all), as Grafana's label_values(match, label).
func (s *Server) LabelValues(label, match string) ([]string, error) {
	q := url.Values{}
	if match != "" {
		q.Set("match[]", match)
	}
	var vals []string
	err := s.get("/api/v1/label/"+url.PathEscape(label)+"/values", q, &vals)
	return vals, err
}

// WaitScrapes waits, polling the API, until every target is up and has
// been scraped successfully at least n times, and returns the time it saw
// that: a time inside the targets' run for which their samples are in the
// database. It fails the test after limit, or at once if stop is closed
// first (the thing being scraped has ended).
func (s *Server) WaitScrapes(t testing.TB, n int, limit time.Duration, stop <-chan struct{}) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(ScrapeInterval / 4)
	defer tick.Stop()
	var last string
	for {
		now := time.Now()
		ok, why := s.Scraped(n, now)
		if ok {
			return now
		}
		last = why
		if now.After(deadline) {
			t.Fatalf("promtest: targets not scraped %d times within %v: %s", n, limit, last)
		}
		select {
		case <-stop:
			t.Fatalf("promtest: the scraped program ended before %d scrapes: %s", n, last)
		case <-tick.C:
		}
	}
}

// Scraped reports whether every target is up with n successful scrapes by
// now, or why not: WaitScrapes's condition, for a caller that polls it
// itself (a program that runs until it has been scraped).
func (s *Server) Scraped(n int, now time.Time) (bool, string) {
	targets, err := s.Targets()
	if err != nil {
		return false, err.Error()
	}
	if len(targets) == 0 {
		return false, "no active targets"
	}
	for _, tg := range targets {
		if tg.Health != "up" {
			return false, fmt.Sprintf("%s is %s (%s)", tg.ScrapeURL, tg.Health, tg.LastError)
		}
	}
	// up is 1 for each successful scrape: its sum is their number.
	res, err := s.Query(fmt.Sprintf(`sum_over_time(up{job=%q}[5m])`, Job), now)
	if err != nil {
		return false, err.Error()
	}
	if len(res) != len(targets) {
		return false, fmt.Sprintf("%d series of up for %d targets", len(res), len(targets))
	}
	for _, r := range res {
		if r.Value < float64(n) {
			return false, fmt.Sprintf("%s: %v successful scrapes", r.Labels["instance"], r.Value)
		}
	}
	return true, ""
}
