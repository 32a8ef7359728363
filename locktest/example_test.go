package locktest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

// Start and Close, for code without a *testing.T; a test calls
// locktest.New(t), which closes at the test's cleanup.
func ExampleStart() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	lease, err := srv.Client().Acquire(context.Background(), "order:42")
	if err != nil {
		panic(err)
	}
	fmt.Println("holding", lease.Key())
	// Output: holding order:42
}

// Another owner holds the lock until its lease is released: the Client is
// refused meanwhile.
func ExampleServer_HoldByAnother() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()

	other, err := srv.HoldByAnother(ctx, "order:42")
	if err != nil {
		panic(err)
	}
	_, err = srv.Client().TryAcquire(ctx, "order:42")
	fmt.Println(err)

	_ = other.Release(ctx)
	_, err = srv.Client().TryAcquire(ctx, "order:42")
	fmt.Println(err)
	// Output:
	// lockkit: lock "order:42" held by locktest-other (ttl 1h0m0s)
	// <nil>
}

// Redis fails every command until it is made available again.
func ExampleServer_SetUnavailable() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()

	srv.SetUnavailable(true)
	_, err = srv.Client().Acquire(ctx, "order:42")
	fmt.Println(errors.Is(err, core.ErrUnavailable))

	srv.SetUnavailable(false)
	_, err = srv.Client().Acquire(ctx, "order:42")
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

// The lease is lost: its context ends with cause core.ErrLost before
// LoseLease returns, and the lock is free for the next holder.
func ExampleServer_LoseLease() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()

	lease, _ := srv.Client().Acquire(ctx, "order:42")
	if err := srv.LoseLease(ctx, "order:42"); err != nil {
		panic(err)
	}
	fmt.Println(context.Cause(lease.Context()))

	next, err := srv.Client().Acquire(ctx, "order:42", core.NoWait())
	fmt.Println(next.Token() > lease.Token(), err)
	// Output:
	// lockkit: lease lost
	// true <nil>
}
