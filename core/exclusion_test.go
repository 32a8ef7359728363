package core_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// witness checks mutual exclusion independently of the engine: an overlap
// counter per key, and the fencing tokens of successive holders of a key.
type witness struct {
	mu       sync.Mutex
	inside   map[string]*atomic.Int32
	last     map[string]int64
	overlaps atomic.Int64
	backward atomic.Int64
	cycles   atomic.Int64
}

func newWitness(keys ...string) *witness {
	w := &witness{inside: map[string]*atomic.Int32{}, last: map[string]int64{}}
	for _, k := range keys {
		w.inside[k] = new(atomic.Int32)
	}
	return w
}

func (w *witness) enter(key string, token int64) {
	if w.inside[key].Add(1) != 1 {
		w.overlaps.Add(1)
	}
	w.mu.Lock()
	if token <= w.last[key] {
		w.backward.Add(1)
	}
	w.last[key] = token
	w.mu.Unlock()
}

func (w *witness) leave(key string) {
	w.inside[key].Add(-1)
	w.cycles.Add(1)
}

// 3 Clients, each on its own go-redis client as 3 processes would be, 8
// goroutines each, on 2 keys: never two holders, tokens strictly increase.
func TestMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	keys := []string{"acct:1", "acct:2"}
	w := newWitness(keys...)
	ctx := testkit.Context(t, 60*time.Second)
	stopAt := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	var errs atomic.Int64
	for ci := range 3 {
		c := newClient(t, srv, core.WithTTL(2*time.Second), core.WithOwner(fmt.Sprintf("client-%d", ci)))
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := keys[g%2]
				for i := 0; i < 10000 && time.Now().Before(stopAt); i++ {
					l, err := c.Acquire(ctx, key, core.Wait(10*time.Second))
					if err != nil {
						errs.Add(1)
						t.Errorf("acquire: %v", err)
						return
					}
					w.enter(key, l.Token())
					time.Sleep(100 * time.Microsecond) // a critical section worth overlapping
					w.leave(key)
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := w.overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping holders", n)
	}
	if n := w.backward.Load(); n != 0 {
		t.Fatalf("%d fencing tokens not above the previous holder's", n)
	}
	if w.cycles.Load() < 50 {
		t.Fatalf("only %d cycles: the test proved little", w.cycles.Load())
	}
	t.Logf("%d lock cycles, %d errors", w.cycles.Load(), errs.Load())
}

// The same across OS processes: the test binary re-executes itself as 3
// children, and a separate redis-server acts as the witness (an INCR that
// must read 1 inside the critical section, and the token list in hold order).
func TestMutualExclusionAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	srv := redistest.Start(t)
	wit := redistest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const perChild = 60
	var cmds []*exec.Cmd
	for i := range 3 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=exclusion", "LOCK_ADDR="+srv.Addr(), "WITNESS_ADDR="+wit.Addr(),
			"CYCLES="+strconv.Itoa(perChild), "OWNER=proc-"+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	ctx := testkit.Context(t, 10*time.Second)
	overlaps, _ := wit.Client.Get(ctx, "overlaps").Int()
	if overlaps != 0 {
		t.Fatalf("%d overlapping holders across processes", overlaps)
	}
	tokens, err := wit.Client.LRange(ctx, "tokens", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 3*perChild {
		t.Fatalf("%d cycles recorded, want %d", len(tokens), 3*perChild)
	}
	var last int64
	for i, s := range tokens {
		tok, _ := strconv.ParseInt(s, 10, 64)
		if tok <= last {
			t.Fatalf("token #%d %d not above previous %d", i, tok, last)
		}
		last = tok
	}
}

// exclusionChild is the child side of TestMutualExclusionAcrossProcesses.
func exclusionChild() error {
	n, _ := strconv.Atoi(os.Getenv("CYCLES"))
	opt := func(addr string) *redis.Options {
		return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1}
	}
	rdb := redis.NewClient(opt(os.Getenv("LOCK_ADDR")))
	defer rdb.Close()
	wit := redis.NewClient(opt(os.Getenv("WITNESS_ADDR")))
	defer wit.Close()
	c, err := core.New(rdb, core.WithOwner(os.Getenv("OWNER")), core.WithTTL(5*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range n {
		l, err := c.Acquire(ctx, "shared", core.Wait(30*time.Second))
		if err != nil {
			return err
		}
		in, err := wit.Incr(ctx, "inside").Result()
		if err != nil {
			return err
		}
		if in != 1 {
			wit.Incr(ctx, "overlaps")
		}
		wit.RPush(ctx, "tokens", l.Token())
		time.Sleep(time.Millisecond)
		wit.Decr(ctx, "inside")
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	return nil
}
