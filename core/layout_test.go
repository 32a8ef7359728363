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

// sharedV1 is a client of the first layout of the shared locks
// (testdata/sharedv1): its scripts, run directly.
type sharedV1 struct {
	rdb              *redis.Client
	acquire, release *redis.Script
}

func newSharedV1(t *testing.T, rdb *redis.Client) *sharedV1 {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/sharedv1/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	fence := read("nextfence.lua")
	return &sharedV1{
		rdb:     rdb,
		acquire: redis.NewScript(fence + read("shared_acquire.lua")),
		release: redis.NewScript("local publish = 'publish'\n" + read("shared_release.lua")),
	}
}

// hold takes a permit or a side (mode s, r or w; limit for s) of the lock
// at key, attempting until it gets in (it waits with a mark, as its
// Acquire did, and polls: this client has no notifications), runs fn and
// releases.
func (v *sharedV1) hold(ctx context.Context, key, mode string, limit int, fn func()) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	for {
		res, err := v.acquire.Run(ctx, v.rdb, []string{key}, tok, 30000, "v1", "", mode, limit, 3000).Result()
		if err != nil {
			return err
		}
		if _, refused := res.([]any); !refused {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	fn()
	return v.release.Run(ctx, v.rdb, []string{key}, tok, "lockkit:v1:c:x", 10000).Err()
}

// TestSharedLayoutSideBySide: clients of the first layout of semaphores
// and read/write locks (their scripts, testdata/sharedv1) and today's
// Clients on the same locks, as during a rolling deploy, never admit more
// than the lock allows together: at most 2 holders of a semaphore of 2; a
// writer alone. Both kinds of client hold their share. (The order in
// which they are served is each kind's own: a first-layout client does not
// see today's wait queue, nor today's Clients its marks.)
func TestSharedLayoutSideBySide(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 2*time.Minute)
	const rounds = 25
	for _, tc := range []struct {
		name, key string
		mode      func(i int) string // s, r or w
		limit     int
		newTake   func(c *core.Client, mode string) (*core.Lease, error)
	}{
		{"semaphore of 2", "lockkit:v1:sk:side", func(int) string { return "s" }, 2,
			func(c *core.Client, _ string) (*core.Lease, error) { return c.Semaphore("side", 2).Acquire(ctx) }},
		{"read/write", "lockkit:v1:rk:side", func(i int) string { return []string{"w", "r", "r"}[i%3] }, 0,
			func(c *core.Client, mode string) (*core.Lease, error) {
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
				served           [2]atomic.Int32 // first layout, today's
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
				v1 := newSharedV1(t, srv.NewClient())
				c := newClient(t, srv)
				wg.Go(func() {
					for r := range rounds {
						mode := tc.mode(i + r)
						if err := v1.hold(ctx, tc.key, mode, tc.limit, func() { leave := enter(0, mode); work(); leave() }); err != nil {
							errs <- err
							return
						}
					}
				})
				wg.Go(func() {
					for r := range rounds {
						mode := tc.mode(i + r + 1)
						l, err := tc.newTake(c, mode)
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
				t.Errorf("served %d by first-layout clients and %d by today's, want %d each", a, b, 4*rounds)
			}
		})
	}
}
