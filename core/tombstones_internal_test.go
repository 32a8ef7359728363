package core

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/internal/redistest"
)

// sharedRig runs the shared scripts on one lock as many processes would:
// attempts under tokens and queue ids of their own, give-backs, releases.
// Nobody renews anything: what it takes stays until released or expired,
// as a crashed process's does.
type sharedRig struct {
	t   *testing.T
	ctx context.Context
	p   *primary
	n   redisNames
	rdb *redis.Client
}

func newSharedRig(t *testing.T, m sharedMode) *sharedRig {
	srv := redistest.Start(t)
	c, err := New(srv.NewClient())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	rdb := srv.NewClient()
	t.Cleanup(func() { _ = rdb.Close() })
	return &sharedRig{t: t, ctx: ctx, p: c.b.(*primary), n: c.sharedNames("k", m), rdb: rdb}
}

// attempt makes one attempt of token for side m (limit for a permit)
// under queue id queue (empty for none), holding for ttl if admitted.
func (r *sharedRig) attempt(token, queue string, m sharedMode, limit int, ttl time.Duration) acquireReply {
	r.t.Helper()
	rep, err := r.p.acquire(r.ctx, r.n, acquireReq{token: token, ttl: ttl, owner: "rig", mode: m, limit: limit, wait: queue != "", queue: queue})
	if err != nil {
		r.t.Fatalf("attempt of %s: %v", token, err)
	}
	return rep
}

// giveBack gives id back (a token or a queue id) as Client.giveBack does,
// its tombstone kept for keep.
func (r *sharedRig) giveBack(id string, keep time.Duration) {
	r.t.Helper()
	kind := "s"
	if r.n.kind == kindRW {
		kind = "rw"
	}
	argv := []any{nil, nil, 1, r.n.keyArg, id, r.n.channelArg, ms(keep), kind, id}
	if err := r.p.script(r.ctx, sharedReleaseScripts.on(false), r.n, argv, false).Err(); err != nil {
		r.t.Fatalf("give-back of %s: %v", id, err)
	}
}

// waitPast returns once Redis's clock is past until.
func (r *sharedRig) waitPast(until time.Time) {
	r.t.Helper()
	for {
		now, err := r.rdb.Time(r.ctx).Result()
		if err != nil {
			r.t.Fatal(err)
		}
		if now.After(until) {
			return
		}
		time.Sleep(until.Sub(now) + time.Millisecond)
	}
}

// fields counts the hash's fields by their first letter.
func (r *sharedRig) fields() map[byte]int {
	r.t.Helper()
	keys, err := r.rdb.HKeys(r.ctx, r.n.key).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	by := map[byte]int{}
	for _, k := range keys {
		by[k[0]]++
	}
	return by
}

// TestTombstonesBounded: a key keeps its maxTombstones newest tombstones
// and no more. 200 attempts refused by a holder are given back: Z and its
// slot Y<k> stay at maxTombstones each. The newest ones still refuse their
// attempt when it arrives after the give-back (the lock free by then); the
// first give-back's went with the bound, so its late attempt takes the
// permit, for its own TTL only, as a crashed holder's would (what the bound
// costs, shared_lib.lua). A re-sent give-back adds no tombstone.
func TestTombstonesBounded(t *testing.T) {
	r := newSharedRig(t, modePermit)
	holder := newToken()
	if !r.attempt(holder, "", modePermit, 1, time.Minute).ok {
		t.Fatal("the first attempt on a free semaphore was refused")
	}
	const n = 200
	toks := make([]string, n)
	for i := range toks {
		toks[i] = newToken()
		if r.attempt(toks[i], "", modePermit, 1, time.Minute).ok {
			t.Fatal("a second permit of 1 was given")
		}
		r.giveBack(toks[i], fenceKeep)
	}
	r.giveBack(toks[n-1], fenceKeep) // re-sent
	if f := r.fields(); f['Z'] != maxTombstones || f['Y'] != maxTombstones+1 {
		t.Fatalf("after %d give-backs: %d tombstones and %d slot fields (Y included), want %d and %d", n, f['Z'], f['Y'], maxTombstones, maxTombstones+1)
	}
	if ok, err := r.p.release(r.ctx, r.n, holder, false); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	for _, tok := range []string{toks[n-1], toks[n-maxTombstones]} {
		if r.attempt(tok, "", modePermit, 1, time.Minute).ok {
			t.Fatalf("an attempt arriving after its give-back (one of the %d newest) took the permit", maxTombstones)
		}
	}
	if !r.attempt(toks[0], "", modePermit, 1, time.Minute).ok {
		t.Fatalf("the attempt of the oldest give-back, past the %d kept, was refused: its tombstone outlived the bound", maxTombstones)
	}
}

// TestTombstonesSweptAsTheyExpire: tombstones leave as they expire, a few
// per step, with no give-back needed to push them out: 200 give-backs kept
// 300 ms, then once Redis's clock has passed them, refused attempts (steps
// that write nothing else) drop them, at most four per step, every one
// within maxTombstones/4 steps.
func TestTombstonesSweptAsTheyExpire(t *testing.T) {
	r := newSharedRig(t, modeWrite)
	if !r.attempt(newToken(), "", modeWrite, 0, time.Minute).ok {
		t.Fatal("the first writer was refused")
	}
	for range 200 {
		id := newToken()
		r.attempt(id, "", modeWrite, 0, time.Minute)
		r.giveBack(id, 300*time.Millisecond)
	}
	last, err := r.rdb.HGet(r.ctx, r.n.key, "Y").Result()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(last, ",")
	newest, err := r.rdb.HGet(r.ctx, r.n.key, "Y"+strconv.Itoa(atoi(t, parts[1])%maxTombstones)).Result()
	if err != nil {
		t.Fatal(err)
	}
	r.waitPast(time.UnixMilli(int64(atoi(t, strings.SplitN(newest, ":", 2)[0]))))
	before := r.fields()
	steps := 0
	for f := before; f['Z'] > 0; steps++ {
		if steps == maxTombstones/4 {
			t.Fatalf("%d tombstones left after %d steps, want none", f['Z'], steps)
		}
		r.attempt(newToken(), "", modeWrite, 0, time.Minute)
		g := r.fields()
		if d := f['Z'] - g['Z']; d < 1 || d > 4 {
			t.Fatalf("a step dropped %d expired tombstones, want 1 to 4", d)
		}
		f = g
	}
	if f := r.fields(); f['Y'] != 0 {
		t.Fatalf("%d slot fields left once every tombstone went", f['Y'])
	}
	t.Logf("%d tombstones swept in %d steps", before['Z'], steps)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSharedStepsChunkWrites: a step's writes are not bounded by Lua's
// unpack limit (about 8,000 values), whatever it gathers. A release that
// grants the read side to 1,100 waiting reader processes at once (8 values
// each written) and a rescan that drops 3,000 expired readers (3 fields
// each) both succeed, where one HSET or HDEL of everything failed the
// script, and every step after it, until the hash expired.
func TestSharedStepsChunkWrites(t *testing.T) {
	t.Run("grants", func(t *testing.T) {
		r := newSharedRig(t, modeRead)
		w := newToken()
		if !r.attempt(w, "", modeWrite, 0, time.Minute).ok {
			t.Fatal("the writer was refused")
		}
		const readers = 1100
		for range readers { // each under a queue id of its own: a process each
			if r.attempt(newToken(), newToken(), modeRead, 0, time.Minute).ok {
				t.Fatal("a reader went in beside the writer")
			}
		}
		if ok, err := r.p.release(r.ctx, r.n, w, false); err != nil || !ok {
			t.Fatalf("the writer's release, granting %d readers: %v %v", readers, ok, err)
		}
		if f := r.fields(); f['A'] != readers {
			t.Fatalf("%d grants to readers, want %d", f['A'], readers)
		}
	})
	t.Run("rescan", func(t *testing.T) {
		r := newSharedRig(t, modeRead)
		const readers = 3000
		ttl := 2 * time.Second
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				for range readers / 8 {
					if !r.attempt(newToken(), "", modeRead, 0, ttl).ok {
						errs <- fmt.Errorf("reader of goroutine %d refused", g)
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
		// Once Redis's clock has passed every reader's TTL, a writer's
		// attempt rescans and drops them all in one step.
		r.waitPast(time.Now().Add(ttl))
		rep, err := r.p.acquire(r.ctx, r.n, acquireReq{token: newToken(), ttl: time.Minute, owner: "w", mode: modeWrite})
		if err != nil || !rep.ok {
			t.Fatalf("a writer's attempt after %d readers expired: %+v %v", readers, rep, err)
		}
		if f := r.fields(); f['p'] != 1 || f['d'] != 1 {
			t.Fatalf("after the rescan: %d p and %d d fields, want the writer's only", f['p'], f['d'])
		}
	})
}
