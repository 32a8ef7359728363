package lockview_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
)

func TestMethods(t *testing.T) {
	r := newRig(t)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, "PURGE"} {
		resp, _ := r.get(t, m, "/debug/locks/")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d Allow %q, want 405 with Allow: GET, HEAD", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, body := r.get(t, http.MethodHead, "/debug/locks/")
	if resp.StatusCode != http.StatusOK || body != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("HEAD: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestFormatsAndMounts: HTML by default and for browsers, JSON by query or
// Accept, the same under a StripPrefix'd mount and a plain one, with the
// headers that keep the page to itself.
func TestFormatsAndMounts(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		path, accept, wantType string
		status                 int
	}{
		{"/debug/locks/", "", "text/html", 200},
		{"/raw/locks/", "", "text/html", 200},
		{"/debug/locks/?format=json", "", "application/json", 200},
		{"/raw/locks/?format=json", "", "application/json", 200},
		{"/debug/locks/", "application/json", "application/json", 200},
		{"/debug/locks/", "text/html,application/xhtml+xml,application/json;q=0.9", "text/html", 200},
		{"/debug/locks/?format=html", "application/json", "text/html", 200},
		{"/debug/locks/?format=xml", "", "text/plain", 400},
		{"/debug/locks/?keys=all", "", "text/html", 200},
		{"/debug/locks/?keys=all&format=json", "", "application/json", 200},
		{"/debug/locks/?keys=some", "", "text/plain", 400},
	}
	for _, tc := range cases {
		resp, body := r.get(t, http.MethodGet, tc.path, "Accept", tc.accept)
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType) {
			t.Errorf("GET %s (Accept %q): %d %q, want %d %s", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.wantType)
			continue
		}
		if tc.status != 200 {
			continue
		}
		if tc.wantType == "application/json" && !json.Valid([]byte(body)) {
			t.Errorf("GET %s: invalid JSON %s", tc.path, body)
		}
		if tc.wantType == "text/html" && (!strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, `href="?format=json`)) {
			t.Errorf("GET %s: page without refresh or relative JSON link:\n%s", tc.path, body)
		}
		h := resp.Header
		if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: headers %v", tc.path, h)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("GET %s: the page loads or runs something:\n%s", tc.path, body)
		}
	}
}

// TestIndexFormats: the index of views answers as a view does: HTML with
// a link to each view, JSON by query or Accept, read-only.
func TestIndexFormats(t *testing.T) {
	r := newRig(t)
	resp, body := r.get(t, http.MethodGet, "/debug/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `<a href="locks/">`) || !strings.Contains(body, "<style>") {
		t.Errorf("index page: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, hdr := range [][]string{nil, {"Accept", "application/json"}} {
		path := "/debug/"
		if hdr == nil {
			path += "?format=json"
		}
		resp, body := r.get(t, http.MethodGet, path, hdr...)
		var ix lockview.Index
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &ix) != nil ||
			len(ix.Views) != 1 || ix.Views[0].Owner != "replica-1" || ix.Views[0].JSON != "locks/?format=json" {
			t.Errorf("index JSON (%s %v): %d %q %s", path, hdr, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("index JSON: headers %v", resp.Header)
		}
	}
	if resp, _ := r.get(t, http.MethodPost, "/debug/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST index: %d", resp.StatusCode)
	}
	if resp, _ := r.get(t, http.MethodGet, "/debug/?format=yaml"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("index ?format=yaml: %d", resp.StatusCode)
	}
}

// TestUncontendedKeysHidden: by default the hot keys are the contended
// ones; the others are counted, and listed with ?keys=all.
func TestUncontendedKeysHidden(t *testing.T) {
	r := newRig(t, lockview.WithKeys(lockview.KeyRaw))
	ctx := testkit.Context(t, 30*time.Second)
	l, err := r.c.Acquire(ctx, "quiet:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_, body := r.get(t, http.MethodGet, "/debug/locks/?format=json")
	var s lockview.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil || len(s.HotKeys) != 0 || s.HiddenHotKeys != 1 || s.AllHotKeys {
		t.Errorf("default: %v %+v", err, s)
	}
	_, page := r.get(t, http.MethodGet, "/debug/locks/")
	if !strings.Contains(page, `href="?keys=all"`) || strings.Contains(page, "quiet:1") {
		t.Errorf("default page: no link to all keys, or the quiet key shown:\n%s", page)
	}
	if !strings.Contains(page, "Contended keys, up to the last 60.0 s,") { // the default window
		t.Errorf("default page: the hot keys' heading does not give the window:\n%s", page)
	}
	if s := r.snapshot(t); len(s.HotKeys) != 1 || s.HotKeys[0].Key != "quiet:1" || s.HotKeys[0].Contended || !s.AllHotKeys {
		t.Errorf("keys=all: %+v", s)
	}
}

// TestEscaping: keys, names and owners are the callers' strings; the page
// shows them as text.
func TestEscaping(t *testing.T) {
	r := newRig(t, lockview.WithKeys(lockview.KeyRaw))
	ctx := testkit.Context(t, 30*time.Second)
	const evil = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	l, err := r.c.Acquire(ctx, "k"+evil, core.Name("n"+evil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, page := r.get(t, http.MethodGet, "/debug/locks/")
	if strings.Contains(page, "<script>") || strings.Contains(page, "<img") {
		t.Fatalf("unescaped markup on the page:\n%s", page)
	}
	if !strings.Contains(page, "k&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("the key is not shown escaped:\n%s", page)
	}
	_, js := r.get(t, http.MethodGet, "/debug/locks/?format=json")
	if strings.Contains(js, "<script>") {
		t.Fatalf("unescaped markup in the JSON: %s", js)
	}
}

func TestInspectOffByDefault(t *testing.T) {
	r := newRig(t)
	resp, body := r.get(t, http.MethodGet, "/debug/locks/?inspect=order:1")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("inspect when off: %d %s, want 404", resp.StatusCode, body)
	}
	if _, page := r.get(t, http.MethodGet, "/debug/locks/"); strings.Contains(page, `name="inspect"`) {
		t.Fatal("the page offers inspect when it is off")
	}
	if s := r.snapshot(t); s.InspectEnabled || s.Inspect != nil {
		t.Fatalf("snapshot says inspect %v %+v", s.InspectEnabled, s.Inspect)
	}
}

// TestInspect: on, it names another process's holder with its metadata
// (escaped on the page, hashed key in the answer), says free for a free
// key, refuses a key over the limit, and refuses lookups over its limits
// with 429 rather than queueing them.
func TestInspect(t *testing.T) {
	r := newRig(t, lockview.WithInspect(), lockview.WithInspectLimits(1, time.Hour), lockview.WithMaxKeyLen(64))
	ctx := testkit.Context(t, 30*time.Second)
	meta := metaObserver{meta: `traceparent=<b>00-abc</b>`}
	other := testkit.Client(t, r.srv.NewClient(), core.WithOwner("replica-2"), core.WithObserver(meta))
	l, err := other.Acquire(ctx, "order:7")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	resp, page := r.get(t, http.MethodGet, "/debug/locks/?inspect=order:7")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("inspect: %d %s", resp.StatusCode, page)
	}
	if !strings.Contains(page, "replica-2") || !strings.Contains(page, "traceparent=&lt;b&gt;00-abc&lt;/b&gt;") || strings.Contains(page, "<b>00") {
		t.Fatalf("inspect page lacks the holder or escapes badly:\n%s", page)
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("an inspect page refreshes itself (and would repeat the lookup)")
	}
	// The bucket (one lookup, one per hour) is empty now.
	if resp, body := r.get(t, http.MethodGet, "/debug/locks/?inspect=order:7&format=json"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second lookup: %d %s, want 429 with Retry-After", resp.StatusCode, body)
	}
	if resp, _ := r.get(t, http.MethodGet, "/debug/locks/?inspect="+strings.Repeat("k", 65)); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("key over the limit: %d, want 400", resp.StatusCode)
	}
	if resp, _ := r.get(t, http.MethodGet, "/debug/locks/?inspect="); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty key: %d, want 400 (core's key validation)", resp.StatusCode)
	}
}

// TestInspectJSON: an unlimited view answers in JSON, hashed key, holder
// and free keys both, concurrent lookups within its concurrency.
func TestInspectJSON(t *testing.T) {
	r := newRig(t, lockview.WithInspect(), lockview.WithInspectLimits(4, 0))
	ctx := testkit.Context(t, 30*time.Second)
	other := testkit.Client(t, r.srv.NewClient(), core.WithOwner("replica-2"))
	l, err := other.Acquire(ctx, "order:8")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	var wg sync.WaitGroup
	for _, key := range []string{"order:8", "order:9"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := r.get(t, http.MethodGet, "/raw/locks/?format=json&inspect="+key)
			var s lockview.Snapshot
			if err := json.Unmarshal([]byte(body), &s); err != nil || resp.StatusCode != 200 || s.Inspect == nil {
				t.Errorf("inspect %s: %d %v %s", key, resp.StatusCode, err, body)
				return
			}
			want := lockview.Inspected{Key: core.HashKey(key)}
			if key == "order:8" {
				want.Held, want.Owner, want.Token = true, "replica-2", l.Token()
			}
			got := *s.Inspect
			got.TTL = 0
			if got != want {
				t.Errorf("inspect %s = %+v, want %+v", key, got, want)
			}
			if key == "order:8" && s.Inspect.TTL <= 0 {
				t.Errorf("inspect %s: TTL %v", key, s.Inspect.TTL)
			}
		}()
	}
	wg.Wait()
}

type metaObserver struct {
	core.NopObserver
	meta string
}

func (m metaObserver) HolderMetadata(context.Context, core.AcquireInfo) string { return m.meta }

func TestInvalidOptions(t *testing.T) {
	for name, opt := range map[string]lockview.Option{
		"window":   lockview.WithWindow(0),
		"max keys": lockview.WithMaxKeys(0),
		"samples":  lockview.WithSamples(-1),
		"recent":   lockview.WithRecent(0),
		"top":      lockview.WithTopKeys(1000),
		"rows":     lockview.WithMaxRows(0),
		"refresh":  lockview.WithRefresh(-time.Second),
		"key len":  lockview.WithMaxKeyLen(0),
		"inspect":  lockview.WithInspectLimits(0, time.Second),
		"mode":     lockview.WithKeys(lockview.KeyMode(9)),
	} {
		if _, err := lockview.New(opt); !errors.Is(err, lockview.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}
