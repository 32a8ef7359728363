// Command plain is lockkit's quick start in plain Go, with the lock engine
// (package core) alone: three workers settle invoice 42 at once, and the
// lock invoice:42 makes them take turns, in this process and with every
// other one using the same Redis; each waits up to 10 s. Then one that does
// not wait is refused while the invoice is held.
//
//	go -C examples run ./quickstart/plain                        # an embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379 go -C examples run ./quickstart/plain
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
)

func main() {
	locks, closeLocks, err := openLocks()
	if err != nil {
		log.Fatal(err)
	}
	defer closeLocks()
	ctx := context.Background()
	// The work under the lock: here a pause; in a service, a write that
	// carries the lease's fencing token (package fence).
	pause := func(ctx context.Context) {
		sleep, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		<-sleep.Done()
	}

	var wg sync.WaitGroup
	for _, worker := range []string{"a", "b", "c"} {
		wg.Go(func() {
			token, err := settle(ctx, locks, "42", pause, core.Wait(10*time.Second))
			log.Printf("worker %s settled invoice 42 with fencing token %d (error: %v)", worker, token, err)
		})
	}
	wg.Wait()

	held, err := locks.Acquire(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	_, err = settle(ctx, locks, "42", pause, core.NoWait())
	log.Printf("without waiting, while invoice 42 is held: %v (core.ErrNotAcquired: %t)", err, errors.Is(err, core.ErrNotAcquired))
	_ = held.Release(ctx)
}

// settle runs work under the lock of invoice id and returns the fencing
// token it held the lock with. work's context ends (cause core.ErrLost) if
// the lease is lost; the lock is released when work returns.
func settle(ctx context.Context, locks *core.Client, id string, work func(context.Context), opts ...core.AcquireOption) (token int64, err error) {
	key, err := core.JoinKey("invoice", id) // invoice:<id>, id escaped
	if err != nil {
		return 0, err
	}
	err = locks.Do(ctx, key, func(ctx context.Context) error {
		lease, _ := core.LeaseFromContext(ctx)
		token = lease.Token()
		work(ctx)
		return context.Cause(ctx) // nil unless the lease was lost
	}, opts...)
	return token, err
}

// openLocks makes the lock Client on REDIS_URL's Redis, or on an embedded
// one (miniredis) when it is unset, and returns what closes them.
func openLocks() (*core.Client, func(), error) {
	opt, closeRedis := &redis.Options{}, func() {}
	if url := os.Getenv("REDIS_URL"); url != "" {
		var err error
		if opt, err = redis.ParseURL(url); err != nil { // its text may hold a password: never printed
			return nil, nil, errors.New("REDIS_URL is not a redis:// or rediss:// URL")
		}
	} else {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, err
		}
		opt.Addr, closeRedis = mr.Addr(), mr.Close
	}
	opt.ContextTimeoutEnabled = true // core.New requires it: a ctx deadline then bounds Redis I/O
	rdb := redis.NewClient(opt)
	locks, err := core.New(rdb)
	if err != nil {
		return nil, nil, errors.Join(err, rdb.Close())
	}
	return locks, func() { _ = locks.Close(); _ = rdb.Close(); closeRedis() }, nil
}
