package core_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// olderShared is a client of an older layout of the shared locks: their
// scripts, run directly, as a process not yet upgraded runs its own.
type olderShared interface {
	// hold takes a permit or a side (mode s, r or w; limit for s) of the
	// lock at key, attempting until it gets in (this client has no
	// notifications: it polls), runs fn and releases; round is the
	// caller's how-many-th hold, for clients whose rounds differ.
	hold(ctx context.Context, key, mode string, limit, round int, fn func()) error
}

// sharedV1 is a client of the first layout of the shared locks
// (testdata/sharedv1).
type sharedV1 struct {
	rdb              *redis.Client
	acquire, release *redis.Script
}

func readScript(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + dir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newSharedV1(t *testing.T, rdb *redis.Client) olderShared {
	read := func(name string) string { return readScript(t, "sharedv1", name) }
	return &sharedV1{
		rdb:     rdb,
		acquire: redis.NewScript(read("nextfence.lua") + read("shared_acquire.lua")),
		release: redis.NewScript("local publish = 'publish'\n" + read("shared_release.lua")),
	}
}

// hold waits with a mark, as its Acquire did.
func (v *sharedV1) hold(ctx context.Context, key, mode string, limit, _ int, fn func()) error {
	tok := randomToken()
	for {
		res, err := v.acquire.Run(ctx, v.rdb, []string{key}, tok, 30000, "v1", "", mode, limit, 3000).Result()
		if err != nil {
			return err
		}
		if _, refused := res.([]any); !refused {
			break
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
	fn()
	return v.release.Run(ctx, v.rdb, []string{key}, tok, "lockkit:v1:c:x", 10000).Err()
}

// sharedBooks is a client of the layout with books and a wait queue, from
// before tombstones were bounded (testdata/sharedbooks): every tombstone
// a field of its own until a rescan finds it expired.
type sharedBooks struct {
	rdb              *redis.Client
	acquire, release *redis.Script
}

func newSharedBooks(t *testing.T, rdb *redis.Client) olderShared {
	read := func(name string) string { return readScript(t, "sharedbooks", name) }
	lib := read("nextfence.lua") + read("shared_lib.lua")
	return &sharedBooks{
		rdb:     rdb,
		acquire: redis.NewScript("local publish = 'publish'\n" + lib + read("shared_acquire.lua")),
		release: redis.NewScript("local publish = 'publish'\n" + lib + read("shared_release.lua")),
	}
}

// hold gives back the token of every refused attempt, as that client did
// for an attempt cut by its caller's deadline (a tombstone each), and
// attempts again under a new one. Every fifth round it crashes instead of
// releasing: its holder frees at a TTL of 50 ms, for a rescan to find.
func (v *sharedBooks) hold(ctx context.Context, key, mode string, limit, round int, fn func()) error {
	kind := "s"
	if mode != "s" {
		kind = "rw"
	}
	crash := round%5 == 4
	ttl := 30000
	if crash {
		ttl = 50
	}
	for {
		tok := randomToken()
		res, err := v.acquire.Run(ctx, v.rdb, []string{key}, tok, ttl, "books", "", mode, limit, "lockkit:v1:c:x", "").Slice()
		if err != nil {
			return err
		}
		if len(res) > 0 && res[0] == int64(1) {
			fn()
			if crash {
				return nil
			}
			return v.release.Run(ctx, v.rdb, []string{key}, tok, "lockkit:v1:c:x", 10000, kind, "").Err()
		}
		if err := v.release.Run(ctx, v.rdb, []string{key}, tok, "lockkit:v1:c:x", 10000, kind, tok).Err(); err != nil {
			return err
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pause is an older client's poll interval.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Millisecond):
		return nil
	}
}

// TestSharedLayoutSideBySide: clients of the older layouts of semaphores
// and read/write locks (their scripts: testdata/sharedv1, before the books
// and wait queue; testdata/sharedbooks, before tombstones were bounded)
// and today's Clients on the same locks, as during a rolling deploy, never
// admit more than the lock allows together: at most 2 holders of a
// semaphore of 2; a writer alone. Both kinds of client hold their share.
// (The order in which they are served is each kind's own: a first-layout
// client does not see today's wait queue, nor today's Clients its marks.)
// Today's Clients also cut an attempt short before each acquire (a 1 ms
// deadline: a give-back, so a tombstone in a slot), beside the books
// client's tombstones without one and its crashed holders, which each
// kind's rescans drop.
func TestSharedLayoutSideBySide(t *testing.T) {
	for _, older := range []struct {
		name string
		make func(*testing.T, *redis.Client) olderShared
	}{{"first layout", newSharedV1}, {"books", newSharedBooks}} {
		t.Run(older.name, func(t *testing.T) { sharedSideBySide(t, older.make) })
	}
}

func sharedSideBySide(t *testing.T, older func(*testing.T, *redis.Client) olderShared) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 2*time.Minute)
	const rounds = 25
	for _, tc := range []struct {
		name, key string
		mode      func(i int) string // s, r or w
		limit     int
		newTake   func(ctx context.Context, c *core.Client, mode string) (*core.Lease, error)
	}{
		{"semaphore of 2", "lockkit:v1:sk:side", func(int) string { return "s" }, 2,
			func(ctx context.Context, c *core.Client, _ string) (*core.Lease, error) {
				return c.Semaphore("side", 2).Acquire(ctx)
			}},
		{"read/write", "lockkit:v1:rk:side", func(i int) string { return []string{"w", "r", "r"}[i%3] }, 0,
			func(ctx context.Context, c *core.Client, mode string) (*core.Lease, error) {
				if mode == "w" {
					return c.RWLock("side").Lock(ctx)
				}
				return c.RWLock("side").RLock(ctx)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu               sync.Mutex
				holders, writers int
				crowded          []string
				served           [2]atomic.Int32 // older clients, today's
			)
			enter := func(kind int, mode string) func() {
				mu.Lock()
				holders++
				if mode == "w" {
					writers++
				}
				switch {
				case tc.limit > 0 && holders > tc.limit:
					crowded = append(crowded, fmt.Sprintf("%d holders of %d permits", holders, tc.limit))
				case writers > 0 && holders > 1:
					crowded = append(crowded, fmt.Sprintf("a writer beside %d others", holders-1))
				}
				mu.Unlock()
				served[kind].Add(1)
				return func() {
					mu.Lock()
					holders--
					if mode == "w" {
						writers--
					}
					mu.Unlock()
				}
			}
			work := func() { time.Sleep(time.Millisecond) } // a critical section worth overlapping
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 4 {
				old := older(t, srv.NewClient())
				c := newClient(t, srv)
				wg.Go(func() {
					for r := range rounds {
						mode := tc.mode(i + r)
						if err := old.hold(ctx, tc.key, mode, tc.limit, r, func() { leave := enter(0, mode); work(); leave() }); err != nil {
							errs <- err
							return
						}
					}
				})
				wg.Go(func() {
					for r := range rounds {
						mode := tc.mode(i + r + 1)
						cut, cancel := context.WithTimeout(ctx, time.Millisecond)
						if l, err := tc.newTake(cut, c, mode); err == nil {
							_ = l.Release(ctx)
						}
						cancel()
						l, err := tc.newTake(ctx, c, mode)
						if err != nil {
							errs <- err
							return
						}
						leave := enter(1, mode)
						work()
						leave()
						if err := l.Release(ctx); err != nil {
							errs <- err
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
			if len(crowded) > 0 {
				t.Errorf("%d times over the limit, e.g. %s", len(crowded), crowded[0])
			}
			if a, b := served[0].Load(), served[1].Load(); a != 4*rounds || b != 4*rounds {
				t.Errorf("served %d by older clients and %d by today's, want %d each", a, b, 4*rounds)
			}
		})
	}
}
