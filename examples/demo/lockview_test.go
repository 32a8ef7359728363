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
// among its hottest keys, with its waits, and the index links all three.
func TestLockViewDuringRun(t *testing.T) {
	cfg := testConfig("")
	cfg.lockView = "127.0.0.1:0"
	var url string
	cfg.hooks.lockView = func(u string) { url = u }
	views := map[string]lockview.Snapshot{}
	var index string
	var fetchErr error
	cfg.hooks.loaded = func() {
		body, err := fetch(url)
		if err != nil {
			fetchErr = err
			return
		}
		index = body
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
	for _, name := range replicaNames {
		if !strings.Contains(index, `href="`+name+`/"`) {
			t.Errorf("the index does not link %s:\n%s", name, index)
		}
		s := views[name]
		if s.Owner != "demo-"+name || s.KeyMode != "raw" {
			t.Errorf("%s: owner %q, key mode %q", name, s.Owner, s.KeyMode)
		}
		hot := false
		for _, h := range s.HotKeys {
			if h.Key == "order:h1" && h.Acquires > 0 && h.WaitMax > 0 {
				hot = true
			}
		}
		if !hot {
			t.Errorf("%s: order:h1 is not among the hot keys: %+v", name, s.HotKeys)
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
