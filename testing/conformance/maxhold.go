package conformance

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/testkit"
)

// MaxHoldBlocked: a handler blocked on its client past the route's MaxHold
// (300ms) holds its lock no longer than that: blocked in an answer's write
// to a client that does not read it, or in a body's read from a client
// that stopped sending. The next request for the order, on the other
// replica, runs while the first handler is still blocked (TTL 30s: the lock
// was freed at the bound, not at its expiry, and not at the handler's
// return), and the release-error hook hears core.ErrMaxHold once the
// client goes and the handler returns. On a framework that reads the body
// before its handlers run and writes the answer after (Traits.Buffered), no
// handler waits on its client: the answer's case skips, and the body's
// shows that a client dribbling its body holds no lock at all.
func MaxHoldBlocked(t *testing.T, a, b Adapter) {
	for _, tc := range []struct {
		name, blockedIn string
		raw             string // the blocked client's request, written and never read
	}{
		{"in an answer's write", "write", "POST /orders/14/pay HTTP/1.1\r\nHost: lockkit\r\nX-Hold: write\r\nContent-Length: 0\r\n\r\n"},
		{"in a body's read", "read", "POST /orders/14/pay HTTP/1.1\r\nHost: lockkit\r\nX-Hold: read\r\nContent-Length: 1048576\r\n\r\nabc"},
	} {
		t.Run(tc.name, func(t *testing.T) { maxHoldBlocked(t, a, b, tc.blockedIn, tc.raw) })
	}
}

func maxHoldBlocked(t *testing.T, a, b Adapter, blockedIn, raw string) {
	buffered := a.Traits.Buffered
	if buffered && blockedIn == "write" {
		t.Skipf("%s writes the answer after the handler returned: a handler never waits on its client to write", a.Name)
	}
	entered, returned := newSignal(), newSignal()
	h := func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
		if !ok {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		switch r.Header.Get("X-Hold") {
		case "write":
			defer returned.fire()
			entered.fire()
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 1 << 14 { // 1 GiB at most: the client's and the server's buffers fill long before
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "read":
			defer returned.fire()
			entered.fire()
			_, _ = io.Copy(io.Discard, r.Body)
		default:
			select {
			case <-returned.ch:
				ok2(w, "after") // the blocked handler returned first: not what is shown
			default:
				ok2(w, "beside")
			}
		}
	}
	relErr := make(chan error, 4)
	e := newEnv(t, a, b, ttl, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Wait: 20 * time.Second,
		MaxHold: 300 * time.Millisecond, Handler: h, ReleaseError: func(err error) { relErr <- err }})
	ctx := e.ctx(60 * time.Second)
	u, err := url.Parse(e.reps[0].url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	if !buffered {
		entered.wait(t, 10*time.Second, "the blocked client's handler")
	}
	r := e.do(ctx, 1, http.MethodPost, "/orders/14/pay")
	if r.status != http.StatusOK || r.body != "beside" {
		t.Fatalf("the next request while a handler blocked in a %s holds past its MaxHold: %d %q %v, want 200 \"beside\" (the lock freed at the bound)", blockedIn, r.status, r.body, r.err)
	}
	conn.Close() // the client goes: the blocked handler returns
	if buffered {
		select {
		case <-entered.ch:
			t.Errorf("%s ran a handler for a body that never arrived", a.Name)
		default:
		}
		return
	}
	returned.wait(t, 30*time.Second, "the blocked handler to return once its client went")
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("release-error hook got %v, want core.ErrMaxHold", err)
	}
}

// RPCMaxHoldBlockedSend: a server stream's handler blocked in a send past
// the method's MaxHold (300ms), its client reading nothing, holds its lock
// no longer than that plus guard.IOGrace: a call for the same order on the
// other replica, waiting at most 20 s, runs (TTL 30s: freed at the bound,
// not at the expiry), whether the lock was freed under the blocked send or
// the protocol ended the send with the handler's context (connect does),
// and the release-error hook hears core.ErrMaxHold once the handler
// returns. The messages are random letters: connect compresses them
// (gzip by default), and a repeated letter would shrink so far that the
// sends never fill the transport's buffers and never block.
func RPCMaxHoldBlockedSend(t *testing.T, a, b RPCAdapter) {
	entered, returned := newSignal(), newSignal()
	relErr := make(chan error, 4)
	big := randomLetters(64 << 10)
	e := newRPCEnv(t, a, b,
		Method{Name: "Watch", Prefix: "order", Field: "value", MaxHold: 300 * time.Millisecond, ReleaseError: func(err error) { relErr <- err },
			SendHandler: func(_ context.Context, _ string, send func(string) error) error {
				defer returned.fire()
				entered.fire()
				for range 1 << 14 { // 1 GiB at most: flow control stops it long before
					if err := send(big); err != nil {
						return err
					}
				}
				return nil
			}},
		Method{Name: "Pay", Prefix: "order", Field: "value", Wait: 20 * time.Second, Handler: func(context.Context, string, *core.Lease, bool) error { return nil }})
	ctx := testkit.Context(t, 60*time.Second)
	watch, stop := context.WithCancel(ctx)
	defer stop()
	if err := e.reps[0].call.Watch(watch, "Watch", "15"); err != nil {
		t.Fatal(err)
	}
	entered.wait(t, 10*time.Second, "the stream's handler")
	wantReply(t, "a call while a stream blocked in a send holds past its MaxHold", e.reps[1].call.Call(ctx, "Pay", "15"), guard.CodeOK, false)
	stop() // the client goes: the blocked send fails, the handler returns
	returned.wait(t, 30*time.Second, "the blocked handler to return once its client went")
	if err := testkit.Recv(t, relErr, 10*time.Second, "the release-error hook"); !errors.Is(err, core.ErrMaxHold) {
		t.Errorf("release-error hook got %v, want core.ErrMaxHold", err)
	}
}

// randomLetters is n letters that no compressor shrinks much (5.7 bits
// of entropy in each byte).
func randomLetters(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
