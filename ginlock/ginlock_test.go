package ginlock_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/testing/conformance"
)

func init() { gin.SetMode(gin.TestMode) }

func newClient(t *testing.T, srv *redistest.Server) *core.Client {
	t.Helper()
	c, err := core.New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// offlineClient is a Client for tests that must not reach Redis: core.New
// does no I/O, and a request that tried to lock would get 503.
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

// leaseKey answers with the key of the lease the handler holds, or "-".
func leaseKey(c *gin.Context) {
	if l, ok := ginlock.Lease(c); ok {
		c.String(http.StatusOK, l.Key())
		return
	}
	c.String(http.StatusOK, "-")
}

func TestNewPanicsOnBadConfiguration(t *testing.T) {
	c := offlineClient(t)
	key := ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))
	for _, tc := range []struct {
		name   string
		client *core.Client
		opts   []ginlock.Option
		msg    string
	}{
		{"no key source", c, nil, "no key source"},
		{"empty Key", c, []ginlock.Option{ginlock.Key()}, "at least one part"},
		{"two key sources", c, []ginlock.Option{key, ginlock.KeyFromRoute()}, "more than one key source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r, _ := recover().(string)
				if !strings.HasPrefix(r, "ginlock: New: ") || !strings.Contains(r, tc.msg) {
					t.Fatalf("panic %q, want \"ginlock: New: ...%s...\"", r, tc.msg)
				}
			}()
			ginlock.New(tc.client, tc.opts...)
		})
	}
}

// An empty literal part panics where it is written, as in every adapter.
func TestEmptyConstPanics(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "empty key part") {
			t.Fatalf("panic %q", r)
		}
	}()
	ginlock.Const("")
}

// The options every adapter shares are accepted or refused as in every
// other adapter (conformance.OptionCases).
func TestSharedOptionCases(t *testing.T) {
	c := offlineClient(t)
	conformance.RunOptionCases(t, "ginlock: New: ", func(tc conformance.OptionCase) error {
		opts := []ginlock.Option{ginlock.Key(ginlock.Const("k")), ginlock.Wait(tc.Wait), ginlock.TTL(tc.TTL), ginlock.MaxHold(tc.MaxHold),
			ginlock.ReleaseTimeout(tc.ReleaseTimeout), ginlock.AcquireOptions(tc.AcquireOptions...)}
		if tc.NoWait {
			opts = append(opts, ginlock.NoWait())
		}
		opts = append(opts, conformance.KindOptions(tc, ginlock.Limit, ginlock.ReadSide, ginlock.WriteSide, func() ginlock.Option { return ginlock.Key(ginlock.Const("k2")) })...)
		client := c
		if tc.NoClient {
			client = nil
		}
		return conformance.Panic(func() { ginlock.New(client, opts...) })
	})
}

// Used with Use on the whole engine: a request that matches no route (404,
// 405) passes through unlocked instead of failing on the missing :id, a
// CORS preflight is locked like any request, and the Skipper skips.
func TestPassThrough(t *testing.T) {
	srv := redistest.Start(t)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.Use(ginlock.New(newClient(t, srv), ginlock.Key(ginlock.Const("item"), ginlock.Param("id")),
		ginlock.Skipper(func(c *gin.Context) bool { return c.GetHeader("X-Skip") != "" })))
	e.GET("/items/:id", leaseKey)
	e.OPTIONS("/items/:id", leaseKey)
	for _, tc := range []struct {
		method, target, skip string
		status               int
		body                 string
	}{
		{http.MethodGet, "/items/1", "", 200, "item:1"},
		{http.MethodGet, "/nowhere", "", 404, "404 page not found"},
		{http.MethodDelete, "/items/1", "", 405, "405 method not allowed"},
		{http.MethodOptions, "/items/1", "", 200, "item:1"},
		{http.MethodGet, "/items/1", "yes", 200, "-"},
	} {
		w := serve(e, tc.method, tc.target, "X-Skip", tc.skip)
		if w.Code != tc.status || w.Body.String() != tc.body {
			t.Errorf("%s %s skip=%q: %d %q, want %d %q", tc.method, tc.target, tc.skip, w.Code, w.Body.String(), tc.status, tc.body)
		}
	}
	w := serve(e, http.MethodOptions, "/items/1", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if w.Code != 200 || w.Body.String() != "item:1" {
		t.Errorf("CORS preflight: %d %q, want 200 \"item:1\" (locked)", w.Code, w.Body.String())
	}
}

// KeyFromRoute locks the route template plus every path parameter, each an
// escaped part: identical requests share a key, other routes do not.
func TestKeyFromRoute(t *testing.T) {
	srv := redistest.Start(t)
	e := gin.New()
	lock := ginlock.New(newClient(t, srv), ginlock.KeyFromRoute())
	e.POST("/orders/:id/pay", lock, leaseKey)
	e.POST("/orders/:id/lines/:line", lock, leaseKey)
	e.POST("/jobs/nightly", lock, leaseKey)
	for target, want := range map[string]string{
		"/orders/42/pay":     `/orders/\:id/pay:42`,
		"/orders/42/lines/7": `/orders/\:id/lines/\:line:42:7`,
		"/jobs/nightly":      "/jobs/nightly",
	} {
		if w := serve(e, http.MethodPost, target); w.Code != 200 || w.Body.String() != want {
			t.Errorf("%s: %d %q, want key %q", target, w.Code, w.Body.String(), want)
		}
	}
}

// Every answer can be replaced; Retry-After is configurable; every failure
// is in c.Errors for loggers.
func TestResponsesAndErrors(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var seen []error
	e := gin.New()
	e.Use(func(c *gin.Context) {
		c.Next()
		for _, ge := range c.Errors {
			seen = append(seen, ge.Err)
		}
	})
	key := ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))
	e.POST("/default/:id", ginlock.New(client, key, ginlock.NoWait()), leaseKey)
	e.POST("/custom/:id", ginlock.New(client, key, ginlock.NoWait(),
		ginlock.RetryAfter(func(err error) time.Duration {
			var na *core.NotAcquiredError
			if errors.As(err, &na) {
				return 2500 * time.Millisecond
			}
			return time.Second
		}),
		ginlock.OnContended(func(c *gin.Context, err error) { c.JSON(http.StatusTooManyRequests, gin.H{"busy": true}) }),
	), leaseKey)
	e.POST("/tenant", ginlock.New(client, ginlock.Key(ginlock.Const("tenant"), ginlock.Header("X-Tenant")),
		ginlock.OnBadKey(func(c *gin.Context, err error) { c.String(http.StatusUnprocessableEntity, "need a tenant") })), leaseKey)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()

	w := serve(e, http.MethodPost, "/default/1")
	if w.Code != 409 || w.Header().Get("Retry-After") != "1" || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("default 409: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
	w = serve(e, http.MethodPost, "/custom/1")
	if w.Code != 429 || w.Header().Get("Retry-After") != "3" || w.Body.String() != `{"busy":true}` {
		t.Errorf("OnContended: %d Retry-After %q %q", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	w = serve(e, http.MethodPost, "/tenant")
	if w.Code != 422 || w.Body.String() != "need a tenant" {
		t.Errorf("OnBadKey: %d %q", w.Code, w.Body.String())
	}
	if len(seen) != 3 || !errors.Is(seen[0], core.ErrNotAcquired) || !errors.Is(seen[1], core.ErrNotAcquired) || !errors.Is(seen[2], core.ErrInvalidKey) {
		t.Errorf("c.Errors = %v", seen)
	}
}

// A timeout in front (net/http's TimeoutHandler here, gin-contrib/timeout
// works alike) answers before the handler is done: the handler's context
// ends, the lock is held until the handler returns and free right after.
func TestTimeoutInFront(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	inHandler, ctxDone, proceed, returned := make(chan int64), make(chan struct{}), make(chan struct{}), make(chan struct{})
	e := gin.New()
	e.POST("/orders/:id/pay", ginlock.New(client, ginlock.Key(ginlock.Const("order"), ginlock.Param("id"))), func(c *gin.Context) {
		defer close(returned)
		l, _ := ginlock.Lease(c)
		inHandler <- l.Token()
		<-c.Request.Context().Done()
		close(ctxDone)
		<-proceed
	})
	hs := httptest.NewServer(http.TimeoutHandler(e, 300*time.Millisecond, "timeout"))
	defer hs.Close()
	res := make(chan int, 1)
	go func() {
		r, err := http.Post(hs.URL+"/orders/5/pay", "text/plain", nil)
		if err != nil {
			res <- -1
			return
		}
		r.Body.Close()
		res <- r.StatusCode
	}()
	token := testkit.Recv(t, inHandler, 10*time.Second, "inHandler")
	if code := testkit.Recv(t, res, 10*time.Second, "res"); code != http.StatusServiceUnavailable {
		t.Fatalf("timeout in front answered %d, want 503", code)
	}
	testkit.Recv(t, ctxDone, 10*time.Second, "ctxDone")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if h, held, err := client.Inspect(ctx, "order:5"); err != nil || !held || h.Token != token {
		t.Fatalf("after the timeout answered, the running handler's lock: held %v token %d (want %d) %v", held, h.Token, token, err)
	}
	close(proceed)
	testkit.Recv(t, returned, 10*time.Second, "returned")
	deadline := time.Now().Add(5 * time.Second) // TTL is 30s: free by release, not expiry
	for {
		if _, held, err := client.Inspect(ctx, "order:5"); err == nil && !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lock still held 5s after the handler returned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

func TestLeaseWithoutMiddleware(t *testing.T) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	if _, ok := ginlock.Lease(c); ok {
		t.Fatal("Lease on a bare context")
	}
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	if _, ok := ginlock.Lease(c); ok {
		t.Fatal("Lease on an unlocked request")
	}
}
