package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A client that sends its request's body slowly, a byte every few
// milliseconds (never idle long enough for an idle timeout), holds the
// lock its handler took for as long as it keeps sending, unless the
// server's read timeout cuts it: then the handler's read fails, the
// handler returns and releases the lock, the server answers and closes the
// connection, and another request takes the lock. The body announced would
// take hours at that pace; the test waits for those events, not for time.
func TestSlowBodyCutByReadTimeout(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 60*time.Second)
	locks, other := testkit.Client(t, srv.NewClient()), testkit.Client(t, srv.NewClient())

	held := make(chan struct{})      // the handler holds the lock
	read := make(chan readResult, 1) // what its read of the body got
	released := make(chan struct{})  // it released the lock and returned
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(released)
		l, err := locks.Acquire(r.Context(), "order:1")
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		defer l.Release(context.WithoutCancel(r.Context()))
		close(held)
		n, err := io.Copy(io.Discard, r.Body)
		read <- readResult{n, err}
		if err != nil {
			http.Error(w, "request body too slow", http.StatusRequestTimeout)
		}
	})

	timeouts := Default
	timeouts.ReadHeader, timeouts.Read = 2*time.Second, 2*time.Second
	hs := timeouts.HTTPServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	defer func() {
		_ = hs.Close()
		<-served
	}()

	const announced = 1 << 20 // bytes: hours at a byte every 5ms
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /pay HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", announced); err != nil {
		t.Fatal(err)
	}
	// The answer, read as it comes: the server's side of the cut.
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		_, _ = io.Copy(io.Discard, conn) // until the server closes
		answered <- line
	}()

	dribble := time.NewTicker(5 * time.Millisecond)
	defer dribble.Stop()
	sent, checkedHeld := 0, false
	var got readResult
	holding := held // nil once seen
	for waiting := true; waiting; {
		select {
		case <-holding:
			holding = nil
			// While the client dribbles, the order is held.
			if _, err := other.TryAcquire(ctx, "order:1"); !errors.Is(err, core.ErrNotAcquired) {
				t.Fatalf("another request while the body is dribbled: %v, want ErrNotAcquired", err)
			}
			checkedHeld = true
		case <-dribble.C:
			if _, err := conn.Write([]byte{'x'}); err == nil {
				sent++
			}
		case got = <-read:
			waiting = false
		case <-ctx.Done():
			t.Fatalf("the handler still reads a body dribbled for %d bytes: no read timeout", sent)
		}
	}
	if got.err == nil || got.n >= announced || !checkedHeld {
		t.Fatalf("the handler read %d of %d bytes, err %v (lock checked held: %v)", got.n, announced, got.err, checkedHeld)
	}
	select {
	case <-released:
	case <-ctx.Done():
		t.Fatal("the handler did not return after its read failed")
	}
	select {
	case line := <-answered:
		t.Logf("cut after %d bytes sent, %d read: %v; answered %q and closed", sent, got.n, got.err, line)
	case <-ctx.Done():
		t.Fatal("the server neither answered nor closed the connection")
	}
	l, err := other.TryAcquire(ctx, "order:1")
	if err != nil {
		t.Fatalf("the lock after the slow request was cut: %v", err)
	}
	_ = l.Release(ctx)
}

type readResult struct {
	n   int64
	err error
}

// Every server the examples start has the Default timeouts (a fiber app
// those fasthttp has), and they are
// finite: a read timeout of seconds (the requests carry no large body), a
// write timeout above the longest lock wait an example allows (the demo's
// -wait: a minute at most), keepalive bounds on a gRPC connection.
func TestDefaultTimeouts(t *testing.T) {
	s := Start(newListener(t), http.NotFoundHandler())
	defer s.Stop(context.Background())
	hs := s.srv
	if hs.ReadHeaderTimeout != Default.ReadHeader || hs.ReadTimeout != Default.Read || hs.WriteTimeout != Default.Write || hs.IdleTimeout != Default.Idle {
		t.Errorf("Start's server: header %v, read %v, write %v, idle %v; want %+v", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout, Default)
	}
	if fc := Default.FiberConfig(); fc.ReadTimeout != Default.Read || fc.WriteTimeout != Default.Write || fc.IdleTimeout != Default.Idle {
		t.Errorf("FiberConfig: read %v, write %v, idle %v; want %+v", fc.ReadTimeout, fc.WriteTimeout, fc.IdleTimeout, Default)
	}
	d := Default
	for name, v := range map[string]time.Duration{
		"ReadHeader": d.ReadHeader, "Read": d.Read, "Write": d.Write, "Idle": d.Idle,
		"ConnectionIdle": d.ConnectionIdle, "ConnectionAge": d.ConnectionAge, "ConnectionAgeGrace": d.ConnectionAgeGrace,
		"Ping": d.Ping, "PingTimeout": d.PingTimeout, "MinPing": d.MinPing,
	} {
		if v <= 0 {
			t.Errorf("Default.%s is %v: unbounded", name, v)
		}
	}
	if d.Read > 30*time.Second || d.ReadHeader > d.Read || d.Write <= time.Minute {
		t.Errorf("Default: %+v", d)
	}
	if n := len(d.GRPCOptions()); n != 2 {
		t.Errorf("%d gRPC options, want the keepalive parameters and the enforcement policy", n)
	}
}

func newListener(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
