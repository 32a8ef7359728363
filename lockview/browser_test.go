package lockview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
)

// chromium is the headless browser's path. Missing, the test is skipped,
// except in CI (env CI set), where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium not found and CI is set: install it (apt-get install -y chromium): %v", err)
		}
		t.Skipf("chromium not found (apt-get install -y chromium): %v", err)
	}
	return p
}

// runChromium runs headless Chromium with args, bounded by a timeout, in
// its own process group, which is killed when it returns (the browser's
// helper processes with it).
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--no-proxy-server", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// TestBrowserShowsHotKeys renders the page in headless Chromium during a
// contended run and finds in the DOM it built: the hot keys, each with one
// set of routes across two loads of the page however the routes take
// turns; the held lock; a waiting row naming the routes that wait and the
// other process that holds; a loss and a Redis error; and the index, as a
// page styled as the view and as JSON. With LOCKVIEW_SCREENSHOT=path.png it
// also takes a screenshot (docs/lockview.png).
func TestBrowserShowsHotKeys(t *testing.T) {
	bin := chromium(t)
	r := newRig(t, lockview.WithKeys(lockview.KeyRaw), lockview.WithRefresh(5*time.Second))
	ctx := testkit.Context(t, 120*time.Second)
	hot := []string{"order:1042", "account:7", "inventory:sku-19"}
	// Two routes take turns on the hottest key: its row must name both,
	// not whichever was last.
	orderRoutes := []string{"POST /orders/:id/pay", "POST /orders/:id/refund"}
	stop := loadAs(t, r.c, hot[:1], 4, 15*time.Millisecond, orderRoutes...)
	defer stop()
	loadAs(t, r.c, hot[1:2], 3, 10*time.Millisecond, "POST /accounts/:id/deposit")
	load(t, r.c, hot[2:], 2, 5*time.Millisecond)

	// A lease held throughout, two callers queued behind it.
	pinned, err := r.c.Acquire(ctx, "invoice:2024-118", core.Name("POST /invoices/:id/send"))
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Release(context.Background())
	// A lease of another process, two routes of this one waiting for it.
	other := testkit.Client(t, r.srv.NewClient(), core.WithOwner("replica-2"))
	payout, err := other.Acquire(ctx, "payout:77", core.Name("POST /payouts/:id"))
	if err != nil {
		t.Fatal(err)
	}
	defer payout.Release(context.Background())
	waiting := []string{"POST /payouts/:id/approve", "GET /payouts/:id/receipt"}
	wctx, cancelWaiters := context.WithCancel(ctx)
	defer cancelWaiters()
	calls := []struct{ key, name string }{
		{"invoice:2024-118", "POST /invoices/:id/void"}, {"invoice:2024-118", "POST /invoices/:id/void"},
		{"payout:77", waiting[0]}, {"payout:77", waiting[1]},
	}
	waiters := make(chan struct{}, len(calls))
	for _, cl := range calls {
		go func() {
			defer func() { waiters <- struct{}{} }()
			if l, err := r.c.Acquire(wctx, cl.key, core.Name(cl.name), core.Wait(time.Minute)); err == nil {
				_ = l.Release(context.Background())
			}
		}()
	}
	defer func() {
		cancelWaiters()
		for range calls {
			testkit.Recv(t, waiters, 10*time.Second, "a waiter's end")
		}
	}()

	// A lease lost to an operator's force release.
	lost, err := r.c.Acquire(ctx, "report:daily", core.TTL(time.Second), core.Name("cron report"))
	if err != nil {
		t.Fatal(err)
	}
	admin := testkit.Client(t, r.srv.NewClient())
	if _, err := admin.ForceRelease(ctx, "report:daily"); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, lost.Done(), 10*time.Second, "the lease's loss")
	// A Redis error: a second Client of the process, on a Redis that died.
	dead := redistest.Start(t)
	cache := testkit.Client(t, dead.NewClient(), core.WithObserver(r.v.Observer()))
	dead.Kill()
	if _, err := cache.Acquire(ctx, "cache:warmup", core.Wait(time.Second), core.Name("cache warmup")); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("acquire on a dead Redis: %v", err)
	}

	testkit.WaitFor(t, 30*time.Second, "every hot key with waits, both waiting rows, and the loss", func() bool {
		s := r.v.Snapshot(r.c)
		for _, k := range hot {
			if h, ok := hotKey(s, k); !ok || h.Acquires < 10 || !h.Contended {
				return false
			}
		}
		if h, _ := hotKey(s, hot[0]); len(h.Names) != 2 {
			return false
		}
		p, okP := lockRow(s, "invoice:2024-118")
		w, okW := lockRow(s, "payout:77")
		// The lease's context ends just before the view is told of the loss.
		return okP && p.Waiters == 2 && okW && w.Waiters == 2 && len(w.Waiting) == 2 && w.Holder != nil && s.LossesTotal > 0
	})

	url := r.ts.URL + "/debug/locks/"
	dom := runChromium(t, bin, "--virtual-time-budget=2000", "--dump-dom", url)
	for _, k := range hot {
		if !strings.Contains(dom, `<code class="hotkey">`+k+`</code>`) {
			t.Errorf("hot key %s is not in the rendered DOM", k)
		}
	}
	for _, want := range []string{`<tr class="lock">`, "invoice:2024-118", "report:daily", "cache:warmup", "replica-1"} {
		if !strings.Contains(dom, want) {
			t.Errorf("%q is not in the rendered DOM", want)
		}
	}
	// The waiting row: which routes wait, and who holds (the other
	// process, with its fencing token).
	row := domRow(dom, `<tr class="lock">`, "payout:77")
	if !strings.Contains(row, `<span class="wait">waiting</span>`) || !strings.Contains(row, "<code>replica-2</code>") || !strings.Contains(row, strconv.FormatInt(payout.Token(), 10)) {
		t.Errorf("the waiting row does not name its holder replica-2 #%d:\n%s", payout.Token(), row)
	}
	for _, route := range waiting {
		if !strings.Contains(row, `<span class="route">`+route+`</span>`) {
			t.Errorf("the waiting row does not name the waiting route %q:\n%s", route, row)
		}
	}
	// One set of routes per key, the same on a second load of the page.
	names := domCell(domRow(dom, `<tr class="hot">`, hot[0]), `<td class="names">`)
	again := runChromium(t, bin, "--virtual-time-budget=2000", "--dump-dom", url)
	if names2 := domCell(domRow(again, `<tr class="hot">`, hot[0]), `<td class="names">`); names != names2 {
		t.Errorf("%s's routes changed between two loads: %q then %q", hot[0], names, names2)
	}
	for _, route := range orderRoutes {
		if !strings.Contains(names, `<span class="route">`+route+`</span>`) {
			t.Errorf("%s's routes %q lack %q", hot[0], names, route)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	// The index: styled as the view, and JSON when asked.
	index := runChromium(t, bin, "--virtual-time-budget=2000", "--dump-dom", r.ts.URL+"/debug/")
	if css := between(dom, "<style>", "</style>"); css == "" || between(index, "<style>", "</style>") != css {
		t.Errorf("the index is not styled as the view:\n%s", index)
	}
	if !strings.Contains(index, `<a href="locks/">locks/</a>`) || !strings.Contains(index, `<a href="locks/?format=json">JSON</a>`) {
		t.Errorf("the index does not link the view and its JSON:\n%s", index)
	}
	doc := runChromium(t, bin, "--virtual-time-budget=2000", "--dump-dom", r.ts.URL+"/debug/?format=json")
	var ix lockview.Index
	if err := json.Unmarshal([]byte(html.UnescapeString(between(doc, "<pre>", "</pre>"))), &ix); err != nil {
		t.Fatalf("the index's JSON: %v\n%s", err, doc)
	}
	// At least the pinned lock held and payout:77 awaited (a hot key
	// between two holders of this process is awaited for a moment too).
	if len(ix.Views) != 1 || ix.Views[0].Path != "locks/" || ix.Views[0].Owner != "replica-1" || ix.Views[0].Held < 1 || ix.Views[0].Awaited < 1 || ix.Views[0].ContendedKeys < len(hot) {
		t.Errorf("the index's JSON: %+v", ix)
	}

	if path := os.Getenv("LOCKVIEW_SCREENSHOT"); path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		runChromium(t, bin, "--virtual-time-budget=2000", "--window-size=1280,900", "--screenshot="+abs, url)
		if fi, err := os.Stat(abs); err != nil || fi.Size() == 0 {
			t.Fatalf("no screenshot at %s: %v", abs, err)
		}
		t.Logf("screenshot: %s", abs)
	}
}

// domRow is the table row of dom that starts with open and holds key, ""
// when there is none.
func domRow(dom, open, key string) string {
	for _, part := range strings.Split(dom, open)[1:] {
		row, _, _ := strings.Cut(part, "</tr>")
		if strings.Contains(row, ">"+key+"<") {
			return row
		}
	}
	return ""
}

// domCell is the content of the cell of row that starts with open.
func domCell(row, open string) string { return between(row, open, "</td>") }

// between is what s has between the first from and the next to after it.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(rest, to)
	return in
}
