package echolock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/testing/conformance"
)

func newClient(t *testing.T) *core.Client {
	t.Helper()
	c, err := core.New(redistest.Start(t).NewClient())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// offlineClient is a Client for tests that must not reach Redis (core.New
// does no I/O).
func offlineClient(t *testing.T) *core.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := core.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func serve(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func leaseKey(c echo.Context) error {
	if l, ok := echolock.Lease(c); ok {
		return c.String(http.StatusOK, l.Key())
	}
	return c.String(http.StatusOK, "-")
}

func TestConfigErrors(t *testing.T) {
	c := offlineClient(t)
	kf := func(echo.Context) (string, error) { return "k", nil }
	for _, tc := range []struct {
		name string
		cfg  echolock.Config
		msg  string
	}{
		{"no key source", echolock.Config{Client: c}, "no key source"},
		{"both key sources", echolock.Config{Client: c, KeyParts: "const:a", KeyFunc: kf}, "choose one"},
		{"bad spec", echolock.Config{Client: c, KeyParts: "const:order,form:id"}, "unknown source"},
		{"nil client", echolock.Config{KeyParts: "const:a"}, "no *core.Client"},
		{"TTL below 10ms", echolock.Config{Client: c, KeyParts: "const:a", TTL: time.Millisecond}, "TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := tc.cfg.ToMiddleware()
			if mw != nil || !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ToMiddleware = %v, want ErrInvalidOption mentioning %q", err, tc.msg)
			}
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "echolock: ") || !strings.Contains(r, tc.msg) {
					t.Fatalf("NewWithConfig panic %q", r)
				}
			}()
			echolock.NewWithConfig(tc.cfg)
		})
	}
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "no key source") {
			t.Fatalf("New(client, \"\") panic %q", r)
		}
	}()
	echolock.New(c, "")
}

// echo's skippers, of its type middleware.Skipper, fit Config.Skipper.
var _ = echolock.Config{Skipper: middleware.Skipper(middleware.DefaultSkipper)}

// With e.Use or a group's Use: a request that matches no route (404, 405,
// a group's catch-all) passes through unlocked instead of failing on the
// missing :id, a CORS preflight is locked like any request, and the Skipper
// skips.
func TestPassThrough(t *testing.T) {
	client := newClient(t)
	e := echo.New()
	e.Use(echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:item,param:id",
		Skipper: func(c echo.Context) bool { return c.Request().Header.Get("X-Skip") != "" }}))
	e.GET("/items/:id", leaseKey)
	e.OPTIONS("/items/:id", leaseKey)
	g := e.Group("/g", echolock.New(client, "const:g,param:id"))
	g.GET("/items/:id", leaseKey)
	for _, tc := range []struct {
		method, target, skip string
		status               int
		body                 string
	}{
		{http.MethodGet, "/items/1", "", 200, "item:1"},
		{http.MethodGet, "/nowhere", "", 404, "Not Found"},
		{http.MethodDelete, "/items/1", "", 405, "Method Not Allowed"},
		{http.MethodOptions, "/items/1", "", 200, "item:1"},
		{http.MethodGet, "/items/1", "yes", 200, "-"},
		{http.MethodGet, "/g/items/2", "", 200, "g:2"}, // inside e.Use's item:2 lock: Lease is the innermost
		{http.MethodGet, "/g/nowhere/at/all", "", 404, "Not Found"},
	} {
		w := serve(e, tc.method, tc.target, "X-Skip", tc.skip)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s %s skip=%q: %d %q, want %d %q", tc.method, tc.target, tc.skip, w.Code, w.Body.String(), tc.status, tc.body)
		}
	}
	w := serve(e, http.MethodOptions, "/items/1", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if w.Code != 200 || w.Body.String() != "item:1" {
		t.Errorf("CORS preflight: %d %q, want 200 \"item:1\" (locked)", w.Code, w.Body.String())
	}
}

// Outcomes reach the app's HTTPErrorHandler as *echo.HTTPError wrapping the
// core error, with Retry-After already set; the middleware never writes.
func TestOutcomesAreHTTPErrors(t *testing.T) {
	client := newClient(t)
	type seen struct {
		err        error
		retryAfter string
		committed  bool
	}
	var got []seen
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		got = append(got, seen{err, c.Response().Header().Get("Retry-After"), c.Response().Committed})
		e.DefaultHTTPErrorHandler(err, c)
	}
	e.POST("/orders/:id/ship", leaseKey, echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:order,param:id", NoWait: true}))
	e.POST("/tenant", leaseKey, echolock.New(client, "const:tenant,header:X-Tenant"))
	e.POST("/bad/:id", leaseKey, echolock.New(client, "const:b,param:nope"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	for i, tc := range []struct {
		target     string
		status     int
		sentinel   error
		retryAfter string
	}{
		{"/orders/1/ship", 409, core.ErrNotAcquired, "1"},
		{"/tenant", 400, core.ErrInvalidKey, ""},
		{"/bad/1", 500, echolock.ErrNoRouteParam, ""},
	} {
		w := serve(e, http.MethodPost, tc.target)
		if w.Code != tc.status || len(got) != i+1 {
			t.Fatalf("%s: %d (%d errors seen), want %d", tc.target, w.Code, len(got), tc.status)
		}
		var he *echo.HTTPError
		s := got[i]
		if !errors.As(s.err, &he) || he.Code != tc.status || !errors.Is(s.err, tc.sentinel) {
			t.Errorf("%s: error %#v, want *echo.HTTPError %d wrapping %v", tc.target, s.err, tc.status, tc.sentinel)
		}
		if s.retryAfter != tc.retryAfter || s.committed {
			t.Errorf("%s: at the error handler Retry-After %q committed %v", tc.target, s.retryAfter, s.committed)
		}
	}
}

func TestDenyAndErrorHandlers(t *testing.T) {
	client := newClient(t)
	e := echo.New()
	var deniedKey string
	var deniedErr, errorErr error
	cfg := echolock.Config{
		Client: client, KeyParts: "const:order,param:id,header:X-Tenant", NoWait: true,
		RetryAfter: func(error) time.Duration { return 3 * time.Second },
		DenyHandler: func(c echo.Context, key string, err error) error {
			deniedKey, deniedErr = key, err
			return echo.NewHTTPError(http.StatusTooManyRequests, "busy").SetInternal(err)
		},
		ErrorHandler: func(c echo.Context, err error) error {
			errorErr = err
			return c.String(http.StatusUnprocessableEntity, "say which tenant")
		},
	}
	e.POST("/orders/:id/ship", leaseKey, echolock.NewWithConfig(cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := client.Acquire(ctx, "order:1:acme")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	if w := serve(e, http.MethodPost, "/orders/1/ship", "X-Tenant", "acme"); w.Code != 429 || w.Header().Get("Retry-After") != "3" || deniedKey != "order:1:acme" {
		t.Errorf("DenyHandler: %d Retry-After %q key %q", w.Code, w.Header().Get("Retry-After"), deniedKey)
	}
	if w := serve(e, http.MethodPost, "/orders/1/ship"); w.Code != 422 || w.Body.String() != "say which tenant" {
		t.Errorf("ErrorHandler: %d %q", w.Code, w.Body.String())
	}
	var na *core.NotAcquiredError
	if !errors.As(deniedErr, &na) || na.Key != "order:1:acme" || !errors.Is(errorErr, core.ErrInvalidKey) {
		t.Errorf("handlers got %v and %v, want the core errors", deniedErr, errorErr)
	}
}

// KeyFunc's key is used verbatim: "order:42" is the key gin, echo's
// KeyParts and gRPC give for the same order.
func TestKeyFunc(t *testing.T) {
	client := newClient(t)
	e := echo.New()
	e.POST("/pay", leaseKey, echolock.NewWithConfig(echolock.Config{Client: client, KeyFunc: func(c echo.Context) (string, error) {
		switch id := c.QueryParam("order"); id {
		case "boom":
			return "", errors.New("cannot read the order")
		case "":
			return "", nil
		default:
			return core.JoinKey("order", id)
		}
	}}))
	for target, want := range map[string]struct {
		status int
		body   string
	}{
		"/pay?order=42":   {200, "order:42"},
		"/pay?order=a:b":  {200, `order:a\:b`},
		"/pay":            {400, "missing or empty"},
		"/pay?order=boom": {400, "cannot read the order"},
	} {
		if w := serve(e, http.MethodPost, target); w.Code != want.status || !strings.Contains(w.Body.String(), want.body) {
			t.Errorf("%s: %d %q, want %d %q", target, w.Code, w.Body.String(), want.status, want.body)
		}
	}
}

// The options every adapter shares are accepted or refused as in every
// other adapter (conformance.OptionCases): ToMiddleware returns the error,
// NewWithConfig panics with it.
func TestSharedOptionCases(t *testing.T) {
	c := offlineClient(t)
	conformance.RunOptionCases(t, "", func(tc conformance.OptionCase) error {
		if tc.AlsoSide != 0 {
			return conformance.ErrNotExpressible // one ReadWrite field
		}
		cfg := echolock.Config{Client: c, KeyParts: "const:k", Wait: tc.Wait, NoWait: tc.NoWait, TTL: tc.TTL, MaxHold: tc.MaxHold,
			ReleaseTimeout: tc.ReleaseTimeout, AcquireOptions: tc.AcquireOptions, Limit: tc.Limit,
			ReadWrite: map[core.Side]string{core.ReadSide: "read", core.WriteSide: "write"}[tc.Side]}
		if tc.Keys > 1 {
			cfg.KeyParts = ""
			for i := range tc.Keys {
				cfg.Keys = append(cfg.Keys, fmt.Sprint("const:k", i))
			}
		}
		if tc.NoClient {
			cfg.Client = nil
		}
		mw, err := cfg.ToMiddleware()
		if err != nil && !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("ToMiddleware: %v does not match core.ErrInvalidOption", err)
		}
		if (err == nil) != (mw != nil) {
			t.Errorf("ToMiddleware returned %v and a middleware %v", err, mw != nil)
		}
		// NewWithConfig panics with the same error, prefixed.
		if p := conformance.Panic(func() { echolock.NewWithConfig(cfg) }); (p == nil) != (err == nil) || p != nil && p.Error() != "echolock: "+err.Error() {
			t.Errorf("NewWithConfig panicked %v, ToMiddleware said %v", p, err)
		}
		return err
	})
}
