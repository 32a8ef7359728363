package ordersgrpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/grpc/ordersv1"
	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/internal/redistest"
)

// A stream that sends its first message and then stays silent holds
// order:<id> for as long as its connection lives. The server's connection
// age (Timeouts.ConnectionAge, then ConnectionAgeGrace) ends the
// connection, and with it the call: the client's call fails, the handler
// returns, the lock is released and another replica takes it. The test
// waits for those events; the ages are short here, the defaults minutes.
func TestSilentStreamCutByConnectionAge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	timeouts := serve.Default
	timeouts.ConnectionAge, timeouts.ConnectionAgeGrace = 2*time.Second, time.Second
	imp, ev, other := silentImport(t, ctx, Config{Timeouts: timeouts})

	// Silent from here on: the client neither sends nor closes.
	ended := make(chan error, 1)
	go func() {
		var r ordersv1.ImportLinesResponse
		ended <- imp.RecvMsg(&r)
	}()
	select {
	case err := <-ended:
		if status.Code(err) != codes.Unavailable {
			t.Errorf("the silent stream ended with %v, want Unavailable (the connection closed)", err)
		}
	case <-ctx.Done():
		t.Fatal("the silent stream is still open: no connection age")
	}
	ev.await(t, ev.released, "order:5")
	l, err := other.TryAcquire(ctx, "order:5")
	if err != nil {
		t.Fatalf("order:5 after the silent stream was cut: %v", err)
	}
	_ = l.Release(ctx)
}

// A stream that goes silent after its first message gives its order up at
// the lock's maximum hold, long before any connection timeout: another
// replica takes the order while the stream is still open, and the stream,
// once its client goes on, is answered Aborted (what it sent came after
// its lock's bound).
func TestSilentStreamFreedAtMaxHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A bound well past the check silentImport makes right after the first
	// line, so that a slow machine does not free order:5 before it.
	imp, ev, other := silentImport(t, ctx, Config{MaxHold: 2 * time.Second})
	// Silent from here on; the connection's own timeouts are minutes.
	ev.await(t, ev.released, "order:5")
	l, err := other.TryAcquire(ctx, "order:5")
	if err != nil {
		t.Fatalf("order:5 after the silent stream's maximum hold: %v", err)
	}
	_ = l.Release(ctx)
	sendLine(t, imp, "5", "b")
	if _, err := imp.CloseAndRecv(); status.Code(err) != codes.Aborted {
		t.Errorf("the stream after its maximum hold ended with %v, want Aborted", err)
	}
}

// silentImport serves cfg, its Client (observed by the returned events),
// Book and Wait filled in, on a redis-server of its own; opens an
// ImportLines stream whose first line takes order:5; and checks that
// another replica's Client, the one returned, then finds order:5 held.
func silentImport(t *testing.T, ctx context.Context, cfg Config) (grpc.ClientStreamingClient[ordersv1.ImportLinesRequest, ordersv1.ImportLinesResponse], *events, *core.Client) {
	t.Helper()
	srv := redistest.Start(t)
	ev := newEvents()
	book := newSignalBook(false)
	cfg.Client, cfg.Book, cfg.Wait = newClient(t, srv, ev), book, 20*time.Second
	cl := startServer(t, cfg)
	other := newClient(t, srv, core.NopObserver{})

	imp, err := cl.ImportLines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sendLine(t, imp, "5", "a")
	book.awaitAdded(t, "a") // the first message took order:5
	if _, err := other.TryAcquire(ctx, "order:5"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("order:5 while the stream is open: %v, want ErrNotAcquired", err)
	}
	return imp, ev, other
}
