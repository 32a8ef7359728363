package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// evalshaCalls is how many EVALSHA the server ran (INFO commandstats): the
// witness that go-redis really sent the script a second time.
func evalshaCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	st, err := redistest.CommandStats(context.Background(), srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	return int(st["evalsha"].Calls)
}

// go-redis re-sends a write (or claim) whose reply timed out (MaxRetries).
// The first send was applied and its reply lost; the re-sent script finds
// its own token stored and must succeed, not report ErrStale.
func TestRetriedWriteIsIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	px, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	rdb := redis.NewClient(&redis.Options{
		Addr:                  px.Addr(),
		ContextTimeoutEnabled: true,
		MaxRetries:            1,
		ReadTimeout:           300 * time.Millisecond,
		MinRetryBackoff:       time.Millisecond,
		MaxRetryBackoff:       time.Millisecond,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	s := storeOn(t, rdb)
	mustSet(t, s, "r", "a", 100) // loads the script

	for _, op := range []string{"set", "claim", "delete"} {
		before, dropped := evalshaCalls(t, srv), px.Stats().Dropped
		px.DropReplies(true)
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			switch op {
			case "set":
				done <- s.Set(ctx, "r", "b", 200)
			case "claim":
				_, _, err := s.Claim(ctx, "r", 250)
				done <- err
			default:
				done <- s.Delete(ctx, "r", 300)
			}
		}()
		testkit.WaitFor(t, 5*time.Second, "the first reply dropped", func() bool { return px.Stats().Dropped > dropped })
		px.DropReplies(false)
		if err := testkit.Recv(t, done, 10*time.Second, op+" to return"); err != nil {
			t.Fatalf("re-sent %s: %v (want success: the script is idempotent per token)", op, err)
		}
		if n := evalshaCalls(t, srv) - before; n != 2 {
			t.Fatalf("%s: the server ran the script %d times, want 2 (sent, re-sent)", op, n)
		}
	}
	e, ok := mustGet(t, s, "r")
	if ok || e.Token != 300 {
		t.Fatalf("Get = %+v, %v; want deleted at token 300", e, ok)
	}
	wantStale(t, s.Set(ctxT(t), "r", "late", 250), "r", 250, 300)
}
