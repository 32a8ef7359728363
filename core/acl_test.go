package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// aclRules is the least a Redis ACL user needs to run lockkit with the
// default prefix, as docs/deployment.md ("ACL") gives it: the
// scripts (EVALSHA, EVAL, and every command they call, which ACLs check
// too), the notification connection (SUBSCRIBE, UNSUBSCRIBE, PING), WAIT for
// WithReplicaAck, and HELLO, which go-redis sends when it connects (its
// CLIENT SETINFO, on Redis 7.2+, may be refused: go-redis ignores that);
// keys and channels under the prefix only.
var aclRules = []string{
	"resetkeys", "~lockkit:*", "resetchannels", "&lockkit:*", "-@all",
	"+evalsha", "+eval",
	"+hget", "+hmget", "+hset", "+hdel", "+hexists", "+pexpire", "+pttl", "+publish", "+time",
	"+subscribe", "+unsubscribe", "+ping",
	"+wait",
	"+hello",
}

// The engine's core scenarios run as an ACL user with exactly aclRules:
// acquire and release, contention and a waiter woken by the release
// notification, renewal past the TTL, NoWait, Do, Inspect and ForceRelease.
// A user without one of the script's commands is refused, so the list is
// not larger than it looks.
func TestACLUserWithTheDocumentedRules(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 30*time.Second)
	args := append([]any{"ACL", "SETUSER", "locks", "on", ">s3cret"}, toAny(aclRules)...)
	if err := srv.Client.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	asUser := func(o *redis.Options) { o.Username, o.Password = "locks", "s3cret" }
	recA := newRecorder()
	a := newClientOn(t, srv.NewClient(asUser), core.WithTTL(600*time.Millisecond), core.WithObserver(recA))
	rec := newRecorder()
	b := newClientOn(t, srv.NewClient(asUser), core.WithObserver(rec))

	l, err := a.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatalf("Acquire as the ACL user: %v", err)
	}
	if _, err := b.Acquire(ctx, "order:1", core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("NoWait on a held lock: %v", err)
	}
	res := make(chan error, 1)
	go func() {
		w, err := b.Acquire(ctx, "order:1")
		if err == nil {
			err = w.Release(ctx)
		}
		res <- err
	}()
	testkit.WaitFor(t, 5*time.Second, "the waiter to meet the holder", func() bool { _, n, _, _ := rec.snapshot(); return n >= 2 })
	// Four confirmed renewals (every TTL/3) carry the lease past its 600ms TTL.
	testkit.WaitFor(t, 10*time.Second, "four confirmed renewals", func() bool { _, _, n, _ := recA.snapshot(); return n >= 4 })
	if err := l.Context().Err(); err != nil {
		t.Fatalf("lease lost past its TTL: renewal failed as the ACL user (%v)", context.Cause(l.Context()))
	}
	if h, held, err := b.Inspect(ctx, "order:1"); err != nil || !held || h.Token != l.Token() {
		t.Fatalf("Inspect: %+v %v %v", h, held, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, res, 10*time.Second, "the waiter"); err != nil {
		t.Fatalf("the waiter (woken by the release notification): %v", err)
	}
	if err := a.Do(ctx, "order:2", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if _, err := a.Acquire(ctx, "order:3"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ForceRelease(ctx, "order:3"); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}

	// One command less (HSET, used by the acquire script) and the acquire fails:
	// ACLs check the commands scripts call.
	if err := srv.Client.Do(ctx, "ACL", "SETUSER", "locks", "-hset").Err(); err != nil {
		t.Fatal(err)
	}
	c := newClientOn(t, srv.NewClient(asUser))
	if _, err := c.Acquire(ctx, "order:4"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire without HSET = %v, want ErrUnavailable (NOPERM)", err)
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
