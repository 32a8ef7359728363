package lockview_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
)

// rig is a redis-server, a View, a Client observed by it and the view
// served over HTTP at /debug/locks/ (StripPrefix'd) and /raw/locks/ (not).
type rig struct {
	srv *redistest.Server
	v   *lockview.View
	c   *core.Client
	ts  *httptest.Server
}

func newRig(t *testing.T, opts ...lockview.Option) *rig {
	t.Helper()
	srv := redistest.Start(t)
	v, err := lockview.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := testkit.Client(t, srv.NewClient(), core.WithObserver(v.Observer()), core.WithOwner("replica-1"))
	mux := http.NewServeMux()
	mux.Handle("/debug/locks/", http.StripPrefix("/debug/locks", v.Handler(c)))
	mux.Handle("/raw/locks/", v.Handler(c))
	mux.Handle("/debug/{$}", lockview.NewIndex(lockview.Link{Path: "locks/", View: v, Client: c}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &rig{srv: srv, v: v, c: c, ts: ts}
}

// get requests path on the rig's server.
func (r *rig) get(t *testing.T, method, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := r.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// snapshot is the JSON document with every hot key
// (/debug/locks/?format=json&keys=all).
func (r *rig) snapshot(t *testing.T) lockview.Snapshot {
	t.Helper()
	resp, body := r.get(t, http.MethodGet, "/debug/locks/?format=json&keys=all")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET json: %d %s", resp.StatusCode, body)
	}
	var s lockview.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return s
}

// load runs workers goroutines per key that acquire it, hold it for hold
// and release it, until the returned stop is called (also at cleanup).
func load(t *testing.T, c *core.Client, keys []string, workers int, hold time.Duration) (stop func()) {
	t.Helper()
	return loadAs(t, c, keys, workers, hold, "PUT /orders/:id")
}

// loadAs is load with the workers' acquires named after routes, worker i
// of a key by routes[i % len(routes)].
func loadAs(t *testing.T, c *core.Client, keys []string, workers int, hold time.Duration, routes ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, key := range keys {
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					l, err := c.Acquire(ctx, key, core.Wait(5*time.Second), core.Name(routes[i%len(routes)]))
					if err != nil {
						if ctx.Err() == nil && !errors.Is(err, core.ErrNotAcquired) {
							t.Errorf("load %s: %v", key, err)
							return
						}
						continue
					}
					t := time.NewTimer(hold) // the work done under the lock
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
					_ = l.Release(context.Background())
				}
			}()
		}
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func hotKey(s lockview.Snapshot, key string) (lockview.HotKey, bool) {
	for _, h := range s.HotKeys {
		if h.Key == key {
			return h, true
		}
	}
	return lockview.HotKey{}, false
}

func lockRow(s lockview.Snapshot, key string) (lockview.Lock, bool) {
	for _, l := range s.Locks {
		if l.Key == key {
			return l, true
		}
	}
	return lockview.Lock{}, false
}
