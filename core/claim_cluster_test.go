package core_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// testClusterClaim: an idempotency record is one key, so every script of
// it (claim, completion, abandonment, renewal) touches one slot whatever
// braces the key has; it lives on its slot's master; and a waiter is woken
// by the completion's SPUBLISH on the record's shard channel, not a timer
// (the claim's TTL is a minute).
func testClusterClaim(t *testing.T, cl *redistest.Cluster) {
	ctx := testkit.Context(t, 60*time.Second)
	rdb := cl.NewClient()
	var mu sync.Mutex
	var numkeys []int
	rdb.AddHook(testkit.EachCommand(func(cmd redis.Cmder) {
		if a := cmd.Args(); len(a) >= 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			n, _ := a[2].(int)
			mu.Lock()
			numkeys = append(numkeys, n)
			mu.Unlock()
		}
	}))
	owner := testkit.Client(t, rdb)
	waiter := testkit.Client(t, cl.NewClient())
	long := "{t}:" + strings.Repeat("x", core.HashKeyLen)
	for _, key := range []string{"pay:1", "{user:7}:pay", "a}b{c}", "{}z", long} {
		rkey := recordKey(key)
		if key == long {
			sum := sha256.Sum256([]byte(key))
			rkey = core.DefaultPrefix + ":" + core.LayoutVersion + ":ih:" + hex.EncodeToString(sum[:])
		}
		c := mustClaim(t, ctx, owner, key, core.ClaimRequest{TTL: time.Minute, Fingerprint: "f"})
		if n := cl.Master(cl.Slot(rkey)).Client.Exists(ctx, rkey).Val(); n != 1 {
			t.Fatalf("%q: record %q not on its slot's master", key, rkey)
		}
		got := make(chan core.Claim, 1)
		go func() {
			r, err := waiter.Claim(ctx, key, core.ClaimRequest{Fingerprint: "f", Wait: 30 * time.Second})
			if err != nil {
				t.Errorf("%q: waiter: %v", key, err)
			}
			got <- r
		}()
		testkit.WaitFor(t, 10*time.Second, "the waiter's flag", func() bool {
			return cl.Master(cl.Slot(rkey)).Client.HExists(ctx, rkey, "n").Val()
		})
		if err := c.Lease.Extend(ctx, time.Minute); err != nil { // the renewal's script
			t.Fatal(err)
		}
		if err := c.Lease.Complete(ctx, []byte("answer")); err != nil {
			t.Fatal(err)
		}
		if r := testkit.Recv(t, got, 20*time.Second, "the waiter's replay"); !r.Replayed() || string(r.Payload) != "answer" {
			t.Fatalf("%q: waiter got %+v, want the answer", key, r)
		}
		// Abandonment too: a second record of the key's slot.
		a := mustClaim(t, ctx, owner, key+":again", core.ClaimRequest{})
		if err := a.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(numkeys) == 0 {
		t.Fatal("no script calls seen")
	}
	for _, n := range numkeys {
		if n != 1 {
			t.Fatalf("a script call with %d keys (all: %v), want one each", n, numkeys)
		}
	}
}
