package core_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/tcpproxy"
	"github.com/lockkit/lockkit/internal/testkit"
)

// floodKind is a shared lock flooded by callers whose deadlines end
// mid-acquire: take is caller i's acquire, crash takes what a holder that
// crashes holds (every permit, the write side), and hash its Redis hash.
type floodKind struct {
	name, hash string
	take       func(c *core.Client, ctx context.Context, i int, o ...core.AcquireOption) (*core.Lease, error)
	crash      func(c *core.Client, ctx context.Context, o ...core.AcquireOption) ([]*core.Lease, error)
	// holders bounds the holders the lock admits at once (grants
	// included); 0: readers, bounded by the callers (floodCallers).
	holders int
}

var floodKinds = []floodKind{
	{
		name: "semaphore", hash: "lockkit:v1:sk:flood", holders: 2,
		take: func(c *core.Client, ctx context.Context, _ int, o ...core.AcquireOption) (*core.Lease, error) {
			return c.Semaphore("flood", 2).Acquire(ctx, o...)
		},
		crash: func(c *core.Client, ctx context.Context, o ...core.AcquireOption) ([]*core.Lease, error) {
			var ls []*core.Lease
			for range 2 {
				l, err := c.Semaphore("flood", 2).Acquire(ctx, o...)
				if err != nil {
					return nil, err
				}
				ls = append(ls, l)
			}
			return ls, nil
		},
	},
	{
		name: "writers", hash: "lockkit:v1:rk:flood", holders: 1,
		take: func(c *core.Client, ctx context.Context, _ int, o ...core.AcquireOption) (*core.Lease, error) {
			return c.RWLock("flood").Lock(ctx, o...)
		},
		crash: crashWriter,
	},
	{
		name: "readers and writers", hash: "lockkit:v1:rk:flood",
		take: func(c *core.Client, ctx context.Context, i int, o ...core.AcquireOption) (*core.Lease, error) {
			if i%4 == 0 {
				return c.RWLock("flood").Lock(ctx, o...)
			}
			return c.RWLock("flood").RLock(ctx, o...)
		},
		crash: crashWriter,
	},
}

func crashWriter(c *core.Client, ctx context.Context, o ...core.AcquireOption) ([]*core.Lease, error) {
	l, err := c.RWLock("flood").Lock(ctx, o...)
	return []*core.Lease{l}, err
}

const (
	floodClients = 4  // Clients, as processes
	floodCallers = 16 // callers in a loop, spread over the Clients
	// floodGiveBacks: the flood lasts until this many acquires ended by
	// their deadlines (each gives its token back if its call was sent, and
	// its queue's place when it was the last waiter): many times the
	// tombstones a key keeps (core.MaxTombstones).
	floodGiveBacks = 4000
	// floodSlowRead is the SLOWLOG threshold for a step's read of the whole
	// hash (HGETALL, run by a rescan and by a refused attempt naming a new
	// holder; Redis logs the commands a script runs too): such a read of
	// the floodBound fields or fewer takes about 0.1 ms; 1 ms is some
	// 4,000 fields, which the flood's give-backs alone used to add in 3 s.
	floodSlowRead = time.Millisecond
)

// floodBound is the most fields the hash of kind k may have during the
// flood, from what it stores (docs/key-layout.md): the single fields B, f,
// r and Y; per holder p, d and, for a reader's grant, A; per waiting
// process and side Q and I (each Client waits on each side under one queue
// id, and one that left may still be on its way out: 2 per Client and
// side); per tombstone Z and its slot (at most core.MaxTombstones). Readers
// are bounded by the callers, each holding one lease, and tokens given back
// but not yet gone: one more each.
func floodBound(k floodKind) int {
	holders := k.holders
	if holders == 0 {
		holders = 2 * floodCallers
	}
	return 4 + 3*holders + 2*(floodClients*2*2) + 2*core.MaxTombstones
}

// TestSharedDeadlineFlood: callers whose deadlines (0.2 to 3 ms) end in
// the middle of their acquires, thousands of them, give their tokens and
// places back; each give-back leaves a tombstone so that its attempt, if
// still on its way, takes nothing. The lock's hash stays bounded all along
// (HLEN at most floodBound, sampled every 100 give-ups); a holder that then
// crashes (its process's network gone: no renewal, no release) frees its
// capacity at its TTL for the next caller within a few of that caller's
// attempts; and no step reads a hash grown past its live state (no
// HGETALL in SLOWLOG above floodSlowRead), which would hold every other
// key's commands as long. Before tombstones were bounded, the hash grew by
// one field per give-back, and the rescan over it stalled Redis and, past
// Lua's unpack limit, failed, so that every call on the key answered
// ErrUnavailable.
func TestSharedDeadlineFlood(t *testing.T) {
	for _, k := range floodKinds {
		t.Run(k.name, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithArgs("--slowlog-log-slower-than", fmt.Sprint(floodSlowRead.Microseconds()), "--slowlog-max-len", "100000"))
			ctx := testkit.Context(t, 5*time.Minute)
			rdb := srv.NewClient()
			defer rdb.Close()
			cs := make([]*core.Client, floodClients)
			for i := range cs {
				cs[i] = newClient(t, srv)
			}
			gaveUp, served, maxLen := floodShared(t, ctx, rdb, k, cs)
			bound := floodBound(k)
			t.Logf("%d acquires ended by their deadlines, %d served; HLEN at most %d (bound %d)", gaveUp, served, maxLen, bound)
			if maxLen > int64(bound) {
				t.Errorf("the hash reached %d fields, more than the %d its holders, waiting processes and tombstones take: it grows with the give-backs", maxLen, bound)
			}

			attempts, limit := crashThenAcquire(t, ctx, srv, k)
			if attempts > limit {
				t.Errorf("the crashed holder's capacity went to the next caller at its attempt %d, want at most %d", attempts, limit)
			}

			slow, err := rdb.SlowLogGet(ctx, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			var others time.Duration
			for _, s := range slow {
				if len(s.Args) > 0 && strings.EqualFold(s.Args[0], "hgetall") {
					t.Errorf("SLOWLOG: a read of the whole hash took %v", s.Duration)
				} else {
					others = max(others, s.Duration)
				}
			}
			t.Logf("slowest other command in SLOWLOG: %v (scheduling on a loaded machine counts there too)", others)
		})
	}
}

// crashThenAcquire: a holder of kind k on its own Client crashes (its
// network stops: no renewal, no give-back reaches Redis), holding all
// the lock allows for a TTL of 300 ms; the next caller, on another Client,
// gets it. It returns that caller's attempts and the most it may take.
func crashThenAcquire(t *testing.T, ctx context.Context, srv *redistest.Server, k floodKind) (attempts, limit int) {
	px, err := tcpproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	crashed := newClientOn(t, srv.NewClient(func(o *redis.Options) { o.Addr = px.Addr() }), core.WithReleaseTimeout(100*time.Millisecond))
	crashTTL := 300 * time.Millisecond
	if _, err := k.crash(crashed, ctx, core.TTL(crashTTL)); err != nil {
		t.Fatal(err)
	}
	px.Pause()
	defer px.CutAll() // the process is gone: its calls fail
	rec := newRecorder()
	next := newClient(t, srv, core.WithObserver(rec))
	l, err := k.take(next, ctx, 0, core.Wait(time.Minute))
	if err != nil {
		t.Fatalf("the caller behind a crashed holder: %v", err)
	}
	_ = l.Release(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	end := rec.ends[len(rec.ends)-1]
	t.Logf("the caller behind the crashed holder got in at its attempt %d, after %v", end.Attempts, end.Waited)
	// Refused while the crashed holder's TTL runs (and queued), then
	// attempts at the end of the TTL the holder named (one may land just
	// before it) until one finds it passed and takes the capacity freed:
	// about 3; twice that allows for a loaded machine.
	return end.Attempts, 6
}

// floodShared runs floodCallers callers on cs against kind k, each in a
// loop of acquires with deadlines of 0.2 to 3 ms (released at once when
// served), until floodGiveBacks of them ended by their deadlines; it
// returns those, the served ones and the largest HLEN sampled.
func floodShared(t *testing.T, ctx context.Context, rdb *redis.Client, k floodKind, cs []*core.Client) (gaveUp, served, maxLen int64) {
	var (
		ended, ok atomic.Int64
		most      atomic.Int64
		wg        sync.WaitGroup
		errs      = make(chan error, floodCallers)
	)
	sample := func() {
		n, err := rdb.HLen(ctx, k.hash).Result()
		if err != nil {
			errs <- err
			return
		}
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
	}
	for i := range floodCallers {
		c := cs[i%len(cs)]
		wg.Go(func() {
			for ended.Load() < floodGiveBacks && ctx.Err() == nil {
				d := 200*time.Microsecond + rand.N(2800*time.Microsecond)
				actx, cancel := context.WithTimeout(ctx, d)
				l, err := k.take(c, actx, i)
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
					_ = l.Release(ctx)
				case errors.Is(err, context.DeadlineExceeded):
					if n := ended.Add(1); n%100 == 0 {
						sample()
					}
				default:
					errs <- fmt.Errorf("caller %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sample()
	return ended.Load(), ok.Load(), most.Load()
}

// TestTombstoneBoundDocumented: the bound the docs state is the one the
// scripts keep.
func TestTombstoneBoundDocumented(t *testing.T) {
	for doc, want := range map[string]string{
		"../docs/key-layout.md": fmt.Sprintf("at most %d tombstones (%d fields)", core.MaxTombstones, 2*core.MaxTombstones),
		"../docs/waiting.md":    fmt.Sprintf("keeps the newest %d per key", core.MaxTombstones),
	} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
			t.Errorf("%s does not say %q", doc, want)
		}
	}
}
