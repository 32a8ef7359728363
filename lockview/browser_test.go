package lockview_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
// contended run and finds the hot keys, the held lock, a loss and a Redis
// error in the DOM it built. With LOCKVIEW_SCREENSHOT=path.png it also
// takes a screenshot (the README's docs/lockview.png).
func TestBrowserShowsHotKeys(t *testing.T) {
	bin := chromium(t)
	r := newRig(t, lockview.WithKeys(lockview.KeyRaw), lockview.WithRefresh(5*time.Second))
	ctx := testkit.Context(t, 120*time.Second)
	hot := []string{"order:1042", "account:7", "inventory:sku-19"}
	stop := load(t, r.c, hot[:1], 4, 15*time.Millisecond)
	defer stop()
	load(t, r.c, hot[1:2], 3, 10*time.Millisecond)
	load(t, r.c, hot[2:], 2, 5*time.Millisecond)

	// A lease held throughout, two callers queued behind it.
	pinned, err := r.c.Acquire(ctx, "invoice:2024-118", core.Name("POST /invoices/:id/send"))
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Release(context.Background())
	wctx, cancelWaiters := context.WithCancel(ctx)
	defer cancelWaiters()
	waiters := make(chan struct{}, 2)
	for range 2 {
		go func() {
			defer func() { waiters <- struct{}{} }()
			if l, err := r.c.Acquire(wctx, "invoice:2024-118"); err == nil {
				_ = l.Release(context.Background())
			}
		}()
	}
	defer func() {
		cancelWaiters()
		for range 2 {
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

	testkit.WaitFor(t, 30*time.Second, "every hot key with waits, and the loss", func() bool {
		s := r.v.Snapshot(r.c)
		for _, k := range hot {
			if h, ok := hotKey(s, k); !ok || h.Acquires < 10 {
				return false
			}
		}
		p, ok := lockRow(s, "invoice:2024-118")
		// The lease's context ends just before the view is told of the loss.
		return ok && p.Waiters == 2 && s.LossesTotal > 0
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
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
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
