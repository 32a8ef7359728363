package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/lockview"
)

// The demo serves each replica's live lock view while it runs and says
// where: at the end of the load, every replica's view lists the hot order
// among its contended keys, with its waits and the routes that take it,
// and the index links them all, as a page and as JSON (?format=json, as
// the demo prints beside its URL).
func TestLockViewDuringRun(t *testing.T) {
	cfg := testConfig("")
	cfg.lockView = "127.0.0.1:0"
	var url string
	cfg.hooks.lockView = func(u string) { url = u }
	views := map[string]lockview.Snapshot{}
	var index string
	var indexJSON lockview.Index
	var fetchErr error
	cfg.hooks.loaded = func() {
		body, err := fetch(url)
		if err != nil {
			fetchErr = err
			return
		}
		index = body
		body, err = fetch(url + "?format=json")
		if err != nil {
			fetchErr = err
			return
		}
		if err := json.Unmarshal([]byte(body), &indexJSON); err != nil {
			fetchErr = fmt.Errorf("index: %w: %s", err, body)
			return
		}
		for _, name := range replicaNames {
			body, err := fetch(url + name + "/?format=json")
			if err != nil {
				fetchErr = err
				return
			}
			var s lockview.Snapshot
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				fetchErr = fmt.Errorf("%s: %w: %s", name, err, body)
				return
			}
			views[name] = s
		}
	}
	res, out := runScenario(t, cfg)
	checkHolds(t, res, out)
	if fetchErr != nil {
		t.Fatal(fetchErr)
	}
	if url == "" || !strings.Contains(out, "live lock view of each replica while it runs: "+url) {
		t.Fatalf("the demo does not say where its lock view is (%q):\n%s", url, out)
	}
	if len(indexJSON.Views) != len(replicaNames) {
		t.Errorf("the index's JSON lists %d views: %+v", len(indexJSON.Views), indexJSON)
	}
	for i, name := range replicaNames {
		if !strings.Contains(index, `href="`+name+`/"`) {
			t.Errorf("the index does not link %s:\n%s", name, index)
		}
		if i < len(indexJSON.Views) {
			if v := indexJSON.Views[i]; v.Path != name+"/" || v.Owner != "demo-"+name || v.ContendedKeys == 0 {
				t.Errorf("the index's JSON for %s: %+v", name, v)
			}
		}
		s := views[name]
		if s.Owner != "demo-"+name || s.KeyMode != "raw" {
			t.Errorf("%s: owner %q, key mode %q", name, s.Owner, s.KeyMode)
		}
		hot := false
		for _, h := range s.HotKeys {
			// pay, refund, ship... of the hot order: all its routes, not the last.
			if h.Key == "order:h1" && h.Contended && h.Acquires > 0 && h.WaitMax > 0 && len(h.Names) >= 2 {
				hot = true
			}
		}
		if !hot {
			t.Errorf("%s: order:h1 is not among the contended keys with its routes: %+v", name, s.HotKeys)
		}
	}
}

func fetch(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), err
}
