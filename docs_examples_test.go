package lockkit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

// The Examples of this file are the code of docs/locks.md: kinds of lock
// beyond the mutex, each run by go test on an embedded Redis.

// A semaphore: at most n leases of one key at once, across every replica.
func Example_semaphore() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, ctx := srv.Client(), context.Background()

	exports := locks.Semaphore("export:acme", 2) // at most 2 exports of a tenant at once
	first, _ := exports.Acquire(ctx, core.Wait(2*time.Second))
	second, _ := exports.Acquire(ctx, core.Wait(2*time.Second))
	_, err = exports.Acquire(ctx, core.NoWait())
	fmt.Println("third:", errors.Is(err, core.ErrNotAcquired), core.Classify(ctx, err))

	_ = first.Release(ctx)
	third, err := exports.Acquire(ctx, core.NoWait())
	fmt.Println("after a release:", err)
	_ = second.Release(ctx)
	_ = third.Release(ctx)
	// Output:
	// third: true limited
	// after a release: <nil>
}

// A read/write lock: many readers at once, or one writer alone.
func Example_readWrite() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, ctx := srv.Client(), context.Background()

	doc := locks.RWLock("doc:7")
	r1, _ := doc.RLock(ctx)
	r2, err := doc.TryRLock(ctx) // readers share
	fmt.Println("second reader:", err)
	_, err = doc.TryLock(ctx) // a writer waits for the readers
	fmt.Println("writer beside readers:", errors.Is(err, core.ErrNotAcquired))

	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w, err := doc.Lock(ctx, core.Wait(2*time.Second))
	fmt.Println("writer alone:", err)
	_ = w.Release(ctx)
	// Output:
	// second reader: <nil>
	// writer beside readers: true
	// writer alone: <nil>
}

// Several keys, all or nothing, in one canonical order whatever order they
// are given in: a transfer and its reverse never deadlock.
func Example_acquireAll() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, ctx := srv.Client(), context.Background()

	err = locks.DoAll(ctx, []string{"{acct}:2", "{acct}:1"}, func(ctx context.Context) error {
		m, _ := core.MultiLeaseFromContext(ctx) // one Lease per key, for their fencing tokens
		for _, l := range m.Leases() {
			fmt.Println("holding", l.Key())
		}
		return nil
	}, core.Wait(2*time.Second))
	fmt.Println("err:", err)
	// Output:
	// holding {acct}:1
	// holding {acct}:2
	// err: <nil>
}
