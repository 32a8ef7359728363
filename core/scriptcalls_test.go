package core_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
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
// And what each call carries, since every script argument and every field
// read costs Redis (acquire.lua's header): the acquire script gets the
// token, TTL, owner id and metadata, whether or not holder metadata is set
// and also under replica acknowledgement (its calls are pipelined with
// WAIT), and reads the fields o and f; the release script gets the token
// and the channel, and the expiry when it sets one, and reads o, qh and n.
// Redis's SLOWLOG, with every call logged, shows the calls scripts make
// with their arguments.
func TestUncontendedCycleCalls(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ttl           time.Duration
		meta          string
		replicaAck    bool
		releaseExpiry int
	}{
		{"default TTL", core.DefaultTTL, "", false, 0},
		{"5s TTL", 5 * time.Second, "", false, 0},
		{"1s TTL", time.Second, "", false, 1},
		{"40s TTL", 40 * time.Second, "", false, 1},
		{"holder metadata", core.DefaultTTL, "span 42", false, 0},
		{"replica acknowledgement", core.DefaultTTL, "", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := []core.Option{core.WithTTL(tc.ttl)}
			if tc.replicaAck {
				startAckingReplica(t, srv)
				opts = append(opts, core.WithReplicaAck(1, 5*time.Second))
			}
			rdb := srv.NewClient()
			args := &scriptArgs{}
			rdb.AddHook(testkit.EachCommand(args.add))
			rec := newRecorder()
			rec.meta = tc.meta
			c := newClientOn(t, rdb, append(opts, core.WithObserver(rec))...)
			ctx := testkit.Context(t, 10*time.Second)
			warm, err := c.Acquire(ctx, "calls") // scripts loaded, hash made
			if err != nil {
				t.Fatal(err)
			}
			_ = warm.Release(ctx)
			for _, err := range []error{
				srv.Client.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(),
				srv.Client.ConfigSet(ctx, "slowlog-max-len", "1000").Err(),
				srv.Client.ConfigResetStat(ctx).Err(),
				srv.Client.SlowLogReset(ctx).Err(),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			args.reset()
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
			want := map[string]int64{"evalsha": 2 * n, "hmget": 2 * n, "time": n, "hset": 2 * n, "pexpire": n * int64(1+tc.releaseExpiry)}
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
			wantArgs := strings.Repeat(fmt.Sprintf("4 %d ", 2+tc.releaseExpiry), n) // acquire, release, ...
			if got := args.String(); got != wantArgs {
				t.Errorf("script arguments per call %q, want %q", got, wantArgs)
			}
			log, err := srv.Client.SlowLogGet(ctx, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			reads := map[string]int{}
			for _, e := range log {
				if len(e.Args) > 2 && strings.EqualFold(e.Args[0], "hmget") {
					reads[strings.Join(e.Args[2:], " ")]++
				}
			}
			if want := map[string]int{"o f": n, "o qh n": n}; !maps.Equal(reads, want) {
				t.Errorf("fields read (SLOWLOG) %v, want %v", reads, want)
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

// scriptArgs keeps how many arguments (after the keys) each script call a
// client sends has, pipelined or not, in order (add, as a
// testkit.EachCommand hook).
type scriptArgs struct {
	mu sync.Mutex
	n  []int
}

func (s *scriptArgs) reset() {
	s.mu.Lock()
	s.n = nil
	s.mu.Unlock()
}

// String is the counts in order, each followed by a space.
func (s *scriptArgs) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, n := range s.n {
		fmt.Fprintf(&b, "%d ", n)
	}
	return b.String()
}

func (s *scriptArgs) add(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) >= 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
		keys, _ := a[2].(int)
		s.mu.Lock()
		s.n = append(s.n, len(a)-3-keys)
		s.mu.Unlock()
	}
}
