package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lineServer is a loopback server that answers each line "x" with "tag:x"
// and reports every line it received on got (so a test can tell "the server
// got the command" from "the client got the reply").
type lineServer struct {
	ln  net.Listener
	tag string
	got chan string
	wg  sync.WaitGroup
	mu  sync.Mutex
	cs  []net.Conn
}

func startServer(t *testing.T, tag string) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln, tag: tag, got: make(chan string, 100)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs = append(s.cs, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					line = strings.TrimSpace(line)
					s.got <- line
					if _, err := io.WriteString(c, s.tag+":"+line+"\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.cs {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *lineServer) addr() string { return s.ln.Addr().String() }

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

func (c *client) send(t *testing.T, line string) {
	t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// recv reads one reply line within limit.
func (c *client) recv(limit time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(limit))
	line, err := c.r.ReadString('\n')
	return strings.TrimSpace(line), err
}

func (c *client) roundTrip(t *testing.T, line string) string {
	t.Helper()
	c.send(t, line)
	got, err := c.recv(5 * time.Second)
	if err != nil {
		t.Fatalf("reply to %q: %v", line, err)
	}
	return got
}

func expectLine(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("server got %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("server never got %q", want)
	}
}

func TestForwardsBothWays(t *testing.T) {
	s := startServer(t, "a")
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	for _, x := range []string{"one", "two", strings.Repeat("x", 100<<10)} {
		if got := c.roundTrip(t, x); got != "a:"+x {
			t.Fatalf("reply %.20q…", got)
		}
		expectLine(t, s.got, x)
	}
	st := p.Stats()
	if st.Accepted != 1 || st.Open != 1 || st.Upstream < 100<<10 || st.Downstream < 100<<10 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Latency is a lower bound per direction, and adds up over a round trip.
func TestLatency(t *testing.T) {
	s := startServer(t, "a")
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	c.roundTrip(t, "warm")
	<-s.got
	for _, tc := range []struct {
		up, down time.Duration
	}{{300 * time.Millisecond, 0}, {0, 300 * time.Millisecond}, {200 * time.Millisecond, 200 * time.Millisecond}} {
		p.SetLatency(Upstream, tc.up)
		p.SetLatency(Downstream, tc.down)
		start := time.Now()
		c.send(t, "x")
		expectLine(t, s.got, "x")
		atServer := time.Since(start)
		if _, err := c.recv(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		total := time.Since(start)
		if atServer < tc.up || total < tc.up+tc.down {
			t.Fatalf("up %v down %v: server after %v, reply after %v", tc.up, tc.down, atServer, total)
		}
	}
	// Order is kept: a burst under latency arrives whole and in order.
	p.SetLatency(Upstream, 50*time.Millisecond)
	for i := range 20 {
		c.send(t, strings.Repeat("y", i+1))
	}
	for i := range 20 {
		got, err := c.recv(5 * time.Second)
		if err != nil || got != "a:"+strings.Repeat("y", i+1) {
			t.Fatalf("reply %d = %q, %v", i, got, err)
		}
		<-s.got
	}
}

// DropReplies: the server gets and answers the command, the client never
// sees the answer; turned off, replies flow again on the same connection.
func TestDropReplies(t *testing.T) {
	s := startServer(t, "a")
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	c.roundTrip(t, "warm")
	<-s.got
	p.DropReplies(true)
	c.send(t, "lost")
	expectLine(t, s.got, "lost") // the server applied it
	// The server's reply has been written; wait until the proxy read it.
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Dropped == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the proxy never read the server's reply")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, err := c.recv(200 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("client got %q, %v while replies are dropped", got, err)
	}
	p.DropReplies(false)
	if got := c.roundTrip(t, "back"); got != "a:back" {
		t.Fatalf("reply after drops = %q (the dropped reply must not resurface)", got)
	}
	if st := p.Stats(); st.Dropped != int64(len("a:lost\n")) {
		t.Fatalf("dropped %d bytes", st.Dropped)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Pause holds every byte (the server gets nothing, the connection stays
// open); Resume delivers them in order.
func TestPauseResume(t *testing.T) {
	s := startServer(t, "a")
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	c.roundTrip(t, "warm")
	<-s.got
	p.Pause()
	p.Pause() // idempotent
	c.send(t, "held")
	select {
	case got := <-s.got:
		t.Fatalf("server got %q while paused", got)
	case <-time.After(300 * time.Millisecond):
	}
	// A new connection is accepted while paused, and held too.
	c2 := dial(t, p.Addr())
	c2.send(t, "held2")
	p.Resume()
	p.Resume()
	got := map[string]bool{}
	for range 2 {
		select {
		case l := <-s.got:
			got[l] = true
		case <-time.After(5 * time.Second):
			t.Fatal("bytes not delivered after Resume")
		}
	}
	if !got["held"] || !got["held2"] {
		t.Fatalf("server got %v", got)
	}
	for _, cc := range []*client{c, c2} {
		if _, err := cc.recv(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// CutAll closes open connections on both sides; new ones work.
func TestCutAll(t *testing.T) {
	s := startServer(t, "a")
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	c.roundTrip(t, "warm")
	<-s.got
	if n := p.CutAll(); n != 1 {
		t.Fatalf("cut %d connections", n)
	}
	if _, err := c.recv(5 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("read on a cut connection = %v, want EOF or reset", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Open != 0 {
		if time.Now().After(deadline) {
			t.Fatal("cut connection still counted open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c2 := dial(t, p.Addr())
	if got := c2.roundTrip(t, "again"); got != "a:again" {
		t.Fatal(got)
	}
}

// SetTarget moves new connections (a failover behind a fixed address).
func TestSetTarget(t *testing.T) {
	a := startServer(t, "a")
	b := startServer(t, "b")
	p := newProxy(t, a.addr())
	c := dial(t, p.Addr())
	if got := c.roundTrip(t, "x"); got != "a:x" {
		t.Fatal(got)
	}
	p.SetTarget(b.addr())
	if p.Target() != b.addr() {
		t.Fatal("Target not updated")
	}
	if got := c.roundTrip(t, "y"); got != "a:y" {
		t.Fatalf("open connection moved: %q", got)
	}
	p.CutAll()
	c2 := dial(t, p.Addr())
	if got := c2.roundTrip(t, "z"); got != "b:z" {
		t.Fatalf("new connection went to %q", got)
	}
}

// A target that refuses: the client's connection is closed, nothing hangs.
func TestDeadTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := newProxy(t, dead)
	c := dial(t, p.Addr())
	if _, err := c.recv(5 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("read through a proxy to a dead target = %v, want EOF", err)
	}
}

// Close ends every goroutine even with bytes held by latency or a pause
// (goleak in TestMain checks it).
func TestCloseWithPendingBytes(t *testing.T) {
	s := startServer(t, "a")
	p, err := New(s.addr())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	c.roundTrip(t, "warm")
	p.SetLatency(Upstream, time.Hour)
	c.send(t, "slow")
	c2 := dial(t, p.Addr())
	p.Pause()
	c2.send(t, "paused")
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Accepted < 2 || p.Stats().Open < 2 {
		if time.Now().After(deadline) {
			t.Fatal("second connection not accepted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { _ = p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on pending bytes")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still listening after Close")
	}
}
