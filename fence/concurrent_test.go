package fence_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// monitor records, in the server's execution order, the token of every
// write the scripts applied to key (MONITOR shows the commands a script
// runs): an independent witness of what was accepted and in which order.
type monitor struct {
	conn   net.Conn
	done   chan struct{}
	tokens []int64 // written by the reader goroutine until done closes
	err    error
}

const monitorEnd = "fence-monitor-end"

func startMonitor(t *testing.T, srv *redistest.Server, key string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	m := &monitor{conn: conn, done: make(chan struct{})}
	t.Cleanup(func() { _ = conn.Close(); <-m.done })
	r := bufio.NewReaderSize(conn, 1<<16)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	prefix := `"HSET" "` + key + `" "v" `
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				m.err = err
				return
			}
			if strings.Contains(line, monitorEnd) {
				return
			}
			_, args, ok := strings.Cut(line, "[0 lua] ")
			if !ok || !strings.HasPrefix(args, prefix) {
				continue
			}
			// "HSET" "key" "v" "<value>" "f" "<token>"...
			fields := strings.Split(strings.TrimSpace(args), " ")
			if len(fields) < 6 || fields[4] != `"f"` {
				m.err = fmt.Errorf("unexpected HSET in MONITOR: %s", line)
				return
			}
			tok, err := strconv.ParseInt(strings.Trim(fields[5], `"`), 10, 64)
			if err != nil {
				m.err = fmt.Errorf("token in %s: %v", line, err)
				return
			}
			m.tokens = append(m.tokens, tok)
		}
	}()
	return m
}

// stop ends the recording once every command sent before it was executed.
func (m *monitor) stop(t *testing.T, srv *redistest.Server) []int64 {
	t.Helper()
	if err := srv.Client.Echo(context.Background(), monitorEnd).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, m.done, 30*time.Second, "MONITOR to see the end marker")
	if m.err != nil {
		t.Fatalf("MONITOR: %v", m.err)
	}
	return m.tokens
}

// Writers take increasing tokens but send them in a jittered, interleaved
// order, as holders whose writes are delayed do. The server's execution
// order (MONITOR) must show the accepted tokens only, each above the one
// before, and the final record must be the largest accepted.
func TestConcurrentWritersInterleaved(t *testing.T) {
	const writers, perWriter = 8, 150
	srv := redistest.Start(t)
	s := storeOn(t, srv.NewClient())
	mon := startMonitor(t, srv, "c")

	var next atomic.Int64
	next.Store(1_000_000)
	type outcome struct {
		token int64
		err   error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
	)
	ctx := ctxT(t)
	for w := range writers {
		wg.Go(func() {
			for range perWriter {
				token := next.Add(1)
				if rand.IntN(3) == 0 { // a delayed holder: jitter, not synchronisation
					time.Sleep(rand.N(300 * time.Microsecond))
				}
				err := s.Set(ctx, "c", fmt.Sprintf("w%d-%d", w, token), token)
				mu.Lock()
				outcomes = append(outcomes, outcome{token, err})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	applied := mon.stop(t, srv)

	var accepted []int64
	stale := 0
	for _, o := range outcomes {
		var se *fence.StaleError
		switch {
		case o.err == nil:
			accepted = append(accepted, o.token)
		case errors.As(o.err, &se):
			stale++
			if se.Current <= o.token {
				t.Errorf("token %d refused while the store held %d", o.token, se.Current)
			}
		default:
			t.Fatalf("token %d: %v", o.token, o.err)
		}
	}
	if stale == 0 || len(accepted) == 0 {
		t.Fatalf("%d accepted, %d stale: the writes did not interleave", len(accepted), stale)
	}
	for i := 1; i < len(applied); i++ {
		if applied[i] <= applied[i-1] {
			t.Fatalf("applied in order %d then %d: an older token was accepted after a newer one", applied[i-1], applied[i])
		}
	}
	slices.Sort(accepted)
	if !slices.Equal(accepted, applied) { // applied is sorted, as just checked
		t.Fatalf("the server applied %d writes, the callers were told %d were accepted", len(applied), len(accepted))
	}
	last := accepted[len(accepted)-1]
	e, ok := mustGet(t, s, "c")
	if !ok || e.Token != last || !strings.HasSuffix(e.Value, "-"+strconv.FormatInt(last, 10)) {
		t.Fatalf("final record %+v, want the write of token %d (the largest accepted)", e, last)
	}
	t.Logf("%d writes: %d accepted, %d refused as stale", len(outcomes), len(accepted), stale)
}
