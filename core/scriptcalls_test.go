package core_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// cmdCalls is how many times srv ran each command since its stats were
// reset (INFO commandstats, which counts the calls scripts make too).
func cmdCalls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	st, err := redistest.CommandStats(testkit.Context(t, 5*time.Second), srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64, len(st))
	for name, c := range st {
		out[name] = c.Calls
	}
	return out
}

// The uncontended cycle's Redis calls, by Redis's own count: acquire is
// HMGET, TIME, HSET, PEXPIRE; release is HMGET and one HSET (the lock
// becomes free with an empty owner) and, with the default TTL renewed, no
// expiry call (the lease's own expiry, at least a second and at most 30 s
// away, keeps the last token long enough and the hash not too long) and no
// message (nobody waits). A TTL too short for that second, or longer than
// 30 s, makes the release set the expiry itself (10 s).
//
// And the scripts' arguments, each of which costs Redis about a fifth of a
// call (acquire.lua's header): the acquire's token, TTL, owner id and
// metadata, and the release's token and channel, whether or not holder
// metadata is set; a release that sets the expiry adds it.
func TestUncontendedCycleCalls(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ttl           time.Duration
		meta          string
		releaseExpiry int64
	}{
		{"default TTL", core.DefaultTTL, "", 0},
		{"5s TTL", 5 * time.Second, "", 0},
		{"1s TTL", time.Second, "", 1},
		{"40s TTL", 40 * time.Second, "", 1},
		{"holder metadata", core.DefaultTTL, "span 42", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.NewClient()
			args := &scriptArgs{}
			rdb.AddHook(args)
			rec := newRecorder()
			rec.meta = tc.meta
			c := newClientOn(t, rdb, core.WithTTL(tc.ttl), core.WithObserver(rec))
			ctx := testkit.Context(t, 10*time.Second)
			warm, err := c.Acquire(ctx, "calls") // scripts loaded, hash made
			if err != nil {
				t.Fatal(err)
			}
			_ = warm.Release(ctx)
			if err := srv.Client.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			args.n.Store(0)
			const n = 20
			var last int64
			for range n {
				l, err := c.Acquire(ctx, "calls")
				if err != nil {
					t.Fatal(err)
				}
				if l.Token() <= last {
					t.Fatalf("token %d after %d", l.Token(), last)
				}
				last = l.Token()
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got := cmdCalls(t, srv)
			want := map[string]int64{"evalsha": 2 * n, "hmget": 2 * n, "time": n, "hset": 2 * n, "pexpire": n * (1 + tc.releaseExpiry)}
			for cmd, w := range want {
				if got[cmd] != w {
					t.Errorf("%s: %d calls for %d cycles, want %d (all: %v)", cmd, got[cmd], n, w, got)
				}
			}
			for _, cmd := range []string{"hdel", "publish", "del"} {
				if got[cmd] != 0 {
					t.Errorf("%s: %d calls, want none (all: %v)", cmd, got[cmd], got)
				}
			}
			if got, want := args.n.Load(), (6+tc.releaseExpiry)*n; got != want {
				t.Errorf("%d script arguments in %d cycles, want %d", got, n, want)
			}
			l, err := c.Acquire(ctx, "calls") // the arguments still say who holds it
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			if h, held, err := c.Inspect(ctx, "calls"); err != nil || !held || h.Metadata != tc.meta || h.Owner == "" {
				t.Errorf("Inspect = %+v, %v, %v; want metadata %q and an owner", h, held, err, tc.meta)
			}
		})
	}
}

// scriptArgs is a go-redis hook that counts the arguments (after the keys)
// of the scripts a client sends.
type scriptArgs struct{ n atomic.Int64 }

func (s *scriptArgs) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *scriptArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) >= 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			keys, _ := a[2].(int)
			s.n.Add(int64(len(a) - 3 - keys))
		}
		return next(ctx, cmd)
	}
}
func (s *scriptArgs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
