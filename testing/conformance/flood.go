package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Flood sizes.
const (
	// FloodN is how many distinct methods, distinct unmatched paths and
	// distinct keys the flood sends (each).
	FloodN = 10_000
	// FloodTolerance is the heap growth a flood may leave behind once its
	// requests are done and the heap is collected: a few MiB for the Go
	// runtime's own caches (sync.Pools, the race detector's shadow). What a
	// request could add to a table that is never emptied is far more: the
	// flood's methods and paths are 1 KiB each, 10 MiB per kind.
	FloodTolerance = 4 << 20
)

// Flood is what a hostile client can do to a server's memory: through one
// replica whose lock middleware is installed with a group's Use (so it sees
// unmatched paths and methods too), it sends FloodN requests with distinct
// 1 KiB methods, FloodN with distinct 1 KiB unmatched paths, and FloodN with
// distinct ids on the locked route, some of them refused because the order
// is held. Afterwards the heap, collected, has grown by less than
// FloodTolerance, and every table is back at its size before the flood:
// the Client's per-key tables (core.Client.Stats) and those adapterTables
// reports (nil: none).
func Flood(t *testing.T, a Adapter, adapterTables func(*core.Client) map[string]int) {
	tables := func(c *core.Client) map[string]int {
		m := testkit.Tables(c)
		if adapterTables != nil {
			for k, v := range adapterTables(c) {
				m[k] = v
			}
		}
		return m
	}
	client := testkit.Client(t, redistest.Start(t).NewClient(), core.WithTTL(ttl))
	send := exchange(t, a, client,
		Route{Group: "/api", Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, NoWait: true,
			Handler: func(w http.ResponseWriter, _ *http.Request, _ *core.Lease, ok bool) {
				if !ok {
					http.Error(w, "no lease", http.StatusInternalServerError)
					return
				}
				writeOK(w)
			}})
	serve := func(method, target string) int {
		code, _ := send(method, target)
		return code
	}
	pad := strings.Repeat("x", 1<<10)
	// Warm up every path once: lazily built tables and pools are baseline.
	for _, m := range []string{http.MethodPost, "X" + pad} {
		for _, p := range []string{"/api/orders/warm/pay", "/api/" + pad, "/" + pad} {
			serve(m, p)
		}
	}
	ctx := testkit.Context(t, 60*time.Second)
	base, heap0 := tables(client), testkit.LiveHeap()
	held, err := client.Acquire(ctx, "order:held")
	if err != nil {
		t.Fatal(err)
	}
	if code := serve(http.MethodPost, "/api/orders/held/pay"); code != http.StatusConflict {
		t.Fatalf("request for a held order answered %d, want 409", code)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]map[int]int{}
	count := func(kind string, code int) {
		mu.Lock()
		defer mu.Unlock()
		if codes[kind] == nil {
			codes[kind] = map[int]int{}
		}
		codes[kind][code]++
	}
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < FloodN; i += workers {
				m := fmt.Sprintf("M%05d%s", i, pad)
				count("method", serve(m, "/api/orders/1/pay"))
				count("path", serve(http.MethodPost, fmt.Sprintf("/api/%05d%s", i, pad)))
				count("key", serve(http.MethodPost, fmt.Sprintf("/api/orders/%05d-%s/pay", i, pad[:64])))
				if i%50 == 0 {
					count("held", serve(http.MethodPost, "/api/orders/held/pay"))
				}
			}
		}()
	}
	wg.Wait()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s flood answers: %v", a.Name, codes)
	if n := codes["key"][http.StatusOK]; n != FloodN {
		t.Errorf("%d of %d distinct orders locked and served", n, FloodN)
	}
	if n := codes["held"][http.StatusConflict]; n != FloodN/50 {
		t.Errorf("%d of %d requests for the held order refused", n, FloodN/50)
	}
	for _, kind := range []string{"method", "path"} {
		if n := codes[kind][http.StatusOK]; n != 0 {
			t.Errorf("%d %s-flood requests reached the handler", n, kind)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the tables to be back at their baseline", func() bool {
		now := tables(client)
		for k, v := range now {
			if v > base[k] {
				return false
			}
		}
		return true
	})
	if grown := testkit.LiveHeap() - heap0; grown > FloodTolerance {
		t.Errorf("heap grew by %d KiB over a flood of %d methods, paths and keys (tolerance %d KiB)", grown>>10, FloodN, FloodTolerance>>10)
	} else {
		t.Logf("heap grew by %d KiB (tolerance %d KiB); tables %v → %v", grown>>10, FloodTolerance>>10, base, tables(client))
	}
}
