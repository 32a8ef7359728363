package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A is a process of its own, frozen (SIGSTOP) between its read and its
// write: its renewals stop with it, the lock expires on the server and a
// worker takes it and reads; then A is continued and writes at once, as a
// process resumed after a long GC pause would, without looking at its
// lease again.
func TestS16FencedCounterThroughHolderPause(t *testing.T) {
	s16(t, func(t *testing.T, r *counterRun) {
		const ttl = time.Second
		lock := redistest.Start(t)
		ctx := r.warmUp(func() *redis.Client { return lock.NewClient() }, ttl)

		a := startChild(t, "rmw-holder", "LOCK_ADDR="+lock.Addr(), "STORE_ADDR="+r.store.Addr(),
			"LOCK_KEY="+counterKey, "LOCK_TTL="+ttl.String(), "RMW_MODE="+string(r.mode))
		acq := a.next("acquired")
		op := r.hist.Begin(fmt.Sprintf("A (token %d)", acq.Token))
		a.send(childMsg{Ev: "read"})
		op.Read(a.next("read").Value)
		r.gate.armed.Store(acq.Token)
		a.signal(syscall.SIGSTOP)
		recv(t, r.gate.held, 30*time.Second, "the next holder's read")
		a.signal(syscall.SIGCONT)
		a.send(childMsg{Ev: "go"})
		w := a.next("wrote")
		var aErr error
		switch {
		case w.OK:
			op.End(faults.Written)
		case w.Stale:
			op.End(faults.Refused)
			aErr = fmt.Errorf("%w: %s", fence.ErrStale, w.Err)
		default:
			op.End(faults.Unknown)
			aErr = errors.New(w.Err)
		}
		close(r.gate.open)
		a.wait()
		r.awaitOps(s16Ops)
		r.verdict(ctx, aErr)
	})
}

// rmwHolderChild is A of TestS16FencedCounterThroughHolderPause: it takes
// the lock, says "acquired"; on "read" it reads the counter (Claim or Get,
// as RMW_MODE says) and says what it read; on "go" it writes what it read
// + 1 (Set, or a plain HSET) and says how that went ("wrote").
func rmwHolderChild() error {
	ttl, err := time.ParseDuration(os.Getenv("LOCK_TTL"))
	if err != nil {
		return err
	}
	key, mode := os.Getenv("LOCK_KEY"), rmwMode(os.Getenv("RMW_MODE"))
	opts := func(addr string) *redis.Options {
		return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second}
	}
	lockRdb, storeRdb := redis.NewClient(opts(os.Getenv("LOCK_ADDR"))), redis.NewClient(opts(os.Getenv("STORE_ADDR")))
	defer lockRdb.Close()
	defer storeRdb.Close()
	c, err := core.New(lockRdb, core.WithOwner("A"), core.WithTTL(ttl))
	if err != nil {
		return err
	}
	defer c.Close()
	store, err := fence.NewRedis(storeRdb)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, key, core.Wait(20*time.Second))
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	await := func(want string) error {
		var m childMsg
		if !in.Scan() || json.Unmarshal(in.Bytes(), &m) != nil || m.Ev != want {
			return fmt.Errorf("got %q (%v), want %q", in.Text(), in.Err(), want)
		}
		return nil
	}
	if err := out.Encode(childMsg{Ev: "acquired", Token: l.Token(), Until: l.Until().UnixNano()}); err != nil {
		return err
	}
	if err := await("read"); err != nil {
		return err
	}
	var e fence.Entry
	if mode == claimThenSet {
		e, _, err = store.Claim(ctx, key, l.Token())
	} else {
		e, _, err = store.Get(ctx, key)
	}
	if err != nil {
		return err
	}
	v, err := counterValue(e)
	if err != nil {
		return err
	}
	if err := out.Encode(childMsg{Ev: "read", Value: v}); err != nil {
		return err
	}
	if err := await("go"); err != nil {
		return err
	}
	r := &counterRun{mode: mode}
	werr := r.write(ctx, store, storeRdb, v+1, l.Token())
	return out.Encode(childMsg{Ev: "wrote", OK: werr == nil, Stale: errors.Is(werr, fence.ErrStale), Err: fmt.Sprint(werr)})
}
