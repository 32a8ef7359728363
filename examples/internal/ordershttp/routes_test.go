package ordershttp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordersecho"
	"github.com/lockkit/lockkit/examples/internal/ordersgin"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
	"github.com/lockkit/lockkit/internal/redistest"
)

// acquires records what each acquire asked the engine for.
type acquires struct {
	core.NopObserver
	mu   sync.Mutex
	seen []core.AcquireInfo
}

func (a *acquires) AcquireStart(ctx context.Context, i core.AcquireInfo) context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, i)
	return ctx
}

func (a *acquires) take() []core.AcquireInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seen
	a.seen = nil
	return s
}

// A lock as the banner states it: "<kind> <key>", e.g. "mutex order:<id>".
var stated = regexp.MustCompile(`\b(mutex|semaphore|read|write) ([^\s,]+)`)

// The values the requests carry, for the banner's placeholders.
var placeholders = strings.NewReplacer("<id>", "42", "<to>", "43", "<"+ordershttp.TenantHeader+">", "acme")

// The banner of the gin and echo examples lists every route the router
// registers, once, and for each the lock it really takes: every request
// is sent to the router with an Observer on its lock client, and the
// acquires it makes (kind and key), the semaphore's permits, whether it
// waits and whether it answers a fencing token are what the route's
// banner line says, with its placeholders filled in.
func TestBannerIsWhatTheRoutesLock(t *testing.T) {
	srv := redistest.Start(t)
	var banner bytes.Buffer
	ordershttp.Banner(&banner, false)
	lines := map[string]string{} // "POST /orders/:id/pay" -> its lock
	for _, l := range strings.Split(strings.TrimSpace(banner.String()), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(f[0], "(") {
			continue
		}
		route := f[0] + " " + f[1]
		if _, dup := lines[route]; dup {
			t.Errorf("the banner lists %s twice", route)
		}
		lines[route] = strings.TrimSpace(strings.SplitN(strings.TrimSpace(l), f[1], 2)[1])
	}
	t.Logf("banner:\n%s", banner.String())

	for _, fw := range []struct {
		name      string
		newRouter func(ordershttp.Config) http.Handler
		routes    func(http.Handler) []string
	}{
		{"gin", ordersgin.NewRouter, func(h http.Handler) []string {
			var out []string
			for _, r := range h.(*gin.Engine).Routes() {
				out = append(out, r.Method+" "+r.Path)
			}
			return out
		}},
		{"echo", ordersecho.NewRouter, func(h http.Handler) []string {
			var out []string
			for _, r := range h.(*echo.Echo).Router().Routes() {
				out = append(out, r.Method+" "+r.Path)
			}
			return out
		}},
	} {
		t.Run(fw.name, func(t *testing.T) {
			obs := &acquires{}
			client, err := core.New(srv.NewClient(), core.WithObserver(obs))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			h := fw.newRouter(ordershttp.Config{Client: client, Book: orders.NewStore(0)})
			registered := fw.routes(h)
			slices.Sort(registered)
			var listed []string
			for r := range lines {
				listed = append(listed, r)
			}
			slices.Sort(listed)
			if !slices.Equal(registered, listed) {
				t.Fatalf("registered routes %q, the banner lists %q", registered, listed)
			}
			for _, route := range registered {
				checkRoute(t, h, obs, route, lines[route])
			}
		})
	}
}

// checkRoute sends one request to route and compares the lock it took with
// what the banner line says.
func checkRoute(t *testing.T, h http.Handler, obs *acquires, route, line string) {
	t.Helper()
	method, path, _ := strings.Cut(route, " ")
	target := strings.NewReplacer(":id", "42", ":to", "43").Replace(path) + "?amount=100&plan=gold"
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set(ordershttp.TenantHeader, "acme")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Errorf("%s: %d %s", route, rec.Code, rec.Body.String())
	}

	var want, got []string
	for _, m := range stated.FindAllStringSubmatch(line, -1) {
		want = append(want, m[1]+" "+placeholders.Replace(m[2]))
	}
	seen := obs.take()
	for _, a := range seen {
		got = append(got, a.Kind+" "+a.Key)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("%s: the banner says %q (%q), the request acquired %q", route, want, line, got)
	}
	if line == "no lock" {
		if len(seen) > 0 {
			t.Errorf("%s: the banner says no lock, the request acquired %q", route, got)
		}
		return
	}
	if len(seen) == 0 {
		t.Errorf("%s: the banner says %q, the request acquired nothing (%d %s)", route, line, rec.Code, rec.Body.String())
		return
	}
	for _, a := range seen {
		if noWait := a.Strategy == "nowait"; noWait != strings.Contains(line, "no wait") {
			t.Errorf("%s: the banner says %q, the acquire's strategy is %q", route, line, a.Strategy)
		}
		if a.Kind == core.KindSemaphore && !strings.Contains(line, "("+strconv.Itoa(a.Limit)+" permits)") {
			t.Errorf("%s: the banner says %q, the semaphore has %d permits", route, line, a.Limit)
		}
	}
	if token := rec.Header().Get(ordershttp.TokenHeader) != ""; token != strings.Contains(line, "in "+ordershttp.TokenHeader) {
		t.Errorf("%s: the banner says %q, the answer's %s is %q", route, line, ordershttp.TokenHeader, rec.Header().Get(ordershttp.TokenHeader))
	}
}

// With -nolock the banner says the locks are off.
func TestBannerNoLock(t *testing.T) {
	var b bytes.Buffer
	ordershttp.Banner(&b, true)
	if !strings.Contains(b.String(), "WITHOUT the locks (-nolock)") {
		t.Errorf("banner:\n%s", b.String())
	}
}
