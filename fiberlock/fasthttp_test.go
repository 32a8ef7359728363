package fiberlock_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// acquires counts the acquires that ended, whatever their outcome.
type acquires struct {
	core.NopObserver
	n atomic.Int32
}

func (a *acquires) AcquireEnd(ctx context.Context, _ core.AcquireInfo, _ core.AcquireResult) context.Context {
	a.n.Add(1)
	return ctx
}

// listen serves app on a loopback listener until t ends and returns a
// function that sends a raw request (exactly the bytes given) and reads
// the answer.
func listen(t *testing.T, app *fiber.App) func(raw string) (int, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	t.Cleanup(func() { _ = app.Shutdown(); <-served })
	return func(raw string) (int, string) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("reading the answer to %.60q: %v", raw, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
}

// What a client can send that fasthttp reads its own way: header names in
// any case (normalised), a header twice, Cookie lines fasthttp would
// re-serialise, a URI longer than its read buffer. The key is what the
// handler reads (c.Get) or what net/http would read (cookies, queries), and
// a request fasthttp refuses takes no lock.
func TestFasthttpSpecifics(t *testing.T) {
	obs := &acquires{}
	c := testkit.Client(t, redistest.Start(t).NewClient(), core.WithObserver(obs))
	app := fiber.New()
	app.Post("/h", fiberlock.New(c, fiberlock.Key(fiberlock.Const("t"), fiberlock.Header("X-Tenant"))), func(c fiber.Ctx) error {
		l, _ := fiberlock.Lease(c)
		return c.SendString(l.Key() + " " + c.Get("X-Tenant"))
	})
	app.Post("/c", fiberlock.New(c, fiberlock.Key(fiberlock.Const("t"), fiberlock.Cookie("t"))), func(c fiber.Ctx) error {
		l, _ := fiberlock.Lease(c)
		return c.SendString(l.Key())
	})
	app.Post("/q", fiberlock.New(c, fiberlock.Key(fiberlock.Const("t"), fiberlock.Query("q"))), func(c fiber.Ctx) error {
		l, _ := fiberlock.Lease(c)
		return c.SendString(l.Key())
	})
	send := listen(t, app)
	req := func(target string, headers ...string) string {
		return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n" + strings.Join(headers, "") + "\r\n"
	}
	for _, tc := range []struct {
		name, raw string
		status    int
		body      string
	}{
		{"lower-case name", req("/h", "x-tenant: acme\r\n"), 200, "t:acme acme"},
		{"upper-case name", req("/h", "X-TENANT: acme\r\n"), 200, "t:acme acme"},
		{"a header twice: the first, as the handler reads it", req("/h", "X-Tenant: a\r\n", "X-Tenant: b\r\n"), 200, "t:a a"},
		{"a tab is a control character", req("/h", "X-Tenant: a\tb\r\n"), 400, ""},
		{"a quoted cookie", req("/c", `Cookie: t="acme"`+"\r\n"), 200, "t:acme"},
		{"a cookie on a second line, percent-encoded", req("/c", "Cookie: a=1\r\n", "Cookie: t=%61cme\r\n"), 200, "t:acme"},
		{"a cookie quoted twice: net/http refuses it", req("/c", `Cookie: t=""acme""`+"\r\n"), 400, ""},
		{"a query with a bad escape before a good one", req("/q?q=%zz&q=a+b"), 200, "t:a b"},
		{"a query with a ';': skipped, as net/http does", req("/q?q=x;y&q=z"), 200, "t:z"},
	} {
		status, body := send(tc.raw)
		if status != tc.status || (tc.body != "" && body != tc.body) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, body, tc.status, tc.body)
		}
	}
	// A URI longer than fasthttp's read buffer (4 KB by default) is refused
	// before any handler: no lock is taken for it.
	before := obs.n.Load()
	if status, _ := send(req("/h/"+strings.Repeat("x", 8<<10), "X-Tenant: acme\r\n")); status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an 8 KB URI: %d, want 431", status)
	}
	if n := obs.n.Load() - before; n != 0 {
		t.Errorf("an 8 KB URI took %d acquires, want none", n)
	}
}

// Next skips the middleware (fiber's name for the Skipper); installed with
// app.Use, where fiber does not know the route yet, a Param part is the
// server's mistake: 500 on every request, said once in the log.
func TestNextAndUse(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	var logs bytes.Buffer
	app := fiber.New()
	app.Use("/u", fiberlock.New(c, fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")),
		fiberlock.Logger(slog.New(slog.NewTextHandler(&logs, nil)))))
	app.Post("/u/:id", func(c fiber.Ctx) error { return c.SendString("ran") })
	app.Post("/n/:id", fiberlock.New(c, fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")),
		fiberlock.Next(func(c fiber.Ctx) bool { return c.Get("X-Skip") != "" })), func(c fiber.Ctx) error {
		_, locked := fiberlock.Lease(c)
		if locked {
			return c.SendString("locked")
		}
		return c.SendString("skipped")
	})
	send := listen(t, app)
	for range 3 {
		if status, _ := send("POST /u/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); status != http.StatusInternalServerError {
			t.Errorf("Param under app.Use: %d, want 500", status)
		}
	}
	if n := strings.Count(logs.String(), "every request is answered 500"); n != 1 {
		t.Errorf("the misconfiguration was logged %d times, want once: %s", n, logs.String())
	}
	if _, body := send("POST /n/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); body != "locked" {
		t.Errorf("without X-Skip: %q", body)
	}
	if _, body := send("POST /n/1 HTTP/1.1\r\nHost: x\r\nX-Skip: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); body != "skipped" {
		t.Errorf("with X-Skip: %q", body)
	}
}
