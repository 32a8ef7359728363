package core_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

// A service makes one Client per process, on the address of its Redis
// (from its configuration), on a go-redis client with
// ContextTimeoutEnabled (core.New refuses one without it), and takes the
// lock around the work on a resource. newLocks is that code; the example
// runs it on an embedded Redis (package locktest), which stands in for the
// service's and has no place in one: its clock does not move, so a
// crashed holder's lock would never expire.
func Example() {
	newLocks := func(addr string) (locks *core.Client, closeLocks func(), err error) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		if locks, err = core.New(rdb, core.WithTTL(30*time.Second)); err != nil {
			return nil, nil, errors.Join(err, rdb.Close())
		}
		return locks, func() { _ = locks.Close(); _ = rdb.Close() }, nil
	}

	srv, err := locktest.Start() // the example's Redis; a service passes its own address
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, closeLocks, err := newLocks(srv.Addr())
	if err != nil {
		panic(err)
	}
	defer closeLocks()

	ctx := context.Background()
	lease, err := locks.Acquire(ctx, "order:42", core.Wait(5*time.Second))
	if err != nil {
		fmt.Println("not now:", err) // core.ErrNotAcquired, core.ErrUnavailable, or ctx's error
		return
	}
	defer lease.Release(context.WithoutCancel(ctx))
	fmt.Println("holding", lease.Key())
	// Output: holding order:42
}

// Acquire and Release: the lease's Context ends if the lease is lost, and
// Release takes a context that is not cancelled, so that a request that
// ended still frees the lock at once.
func ExampleClient_Acquire() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()

	ctx := context.Background()
	lease, err := locks.Acquire(ctx, "order:42")
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", lease.Err() == nil)

	if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
		fmt.Println("release:", err)
	}
	fmt.Println("after release:", lease.Err())
	// Output:
	// held: true
	// after release: lockkit: lease not held
}

// Do runs a function holding the lock and releases it when the function
// returns; the function's context ends, with cause core.ErrLost, if the
// lease is lost meanwhile.
func ExampleClient_Do() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()

	err = locks.Do(context.Background(), "order:42", func(ctx context.Context) error {
		lease, _ := core.LeaseFromContext(ctx)
		fmt.Println("paying under", lease.Key())
		return nil
	}, core.Wait(5*time.Second))
	fmt.Println("err:", err)
	// Output:
	// paying under order:42
	// err: <nil>
}

// The fencing token: every holder of a key gets a larger token than the
// holders before it. The resource keeps the largest it has seen and refuses
// writes with a smaller one, so a holder that lost its lock (a long GC
// pause) cannot overwrite its successor's work.
func ExampleLease_Token() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()
	ctx := context.Background()

	var newest int64 // kept by the resource, next to the data
	write := func(token int64) error {
		if token < newest {
			return errors.New("stale fencing token: refused")
		}
		newest = token
		return nil
	}

	first, _ := locks.Acquire(ctx, "order:42")
	_ = first.Release(ctx)
	second, _ := locks.Acquire(ctx, "order:42")
	defer second.Release(ctx)

	fmt.Println("second holder writes:", write(second.Token()))
	fmt.Println("first holder, late:", write(first.Token()))
	// Output:
	// second holder writes: <nil>
	// first holder, late: stale fencing token: refused
}

// A second acquire of a held key waits, up to its budget, and gets the lock
// as soon as the holder releases it (woken by the release, not polling).
// NoWait refuses at once instead.
func ExampleWait() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()
	ctx := context.Background()

	first, _ := locks.Acquire(ctx, "order:42")

	_, err = locks.Acquire(ctx, "order:42", core.NoWait())
	fmt.Println("no wait:", errors.Is(err, core.ErrNotAcquired))

	got := make(chan *core.Lease)
	go func() {
		second, err := locks.Acquire(ctx, "order:42", core.Wait(5*time.Second))
		if err != nil {
			panic(err)
		}
		got <- second
	}()
	time.Sleep(10 * time.Millisecond) // the work of the first holder
	_ = first.Release(ctx)
	fmt.Println("first released")

	second := <-got
	fmt.Println("second holds it, with a larger token:", second.Token() > first.Token())
	_ = second.Release(ctx)
	// Output:
	// no wait: true
	// first released
	// second holds it, with a larger token: true
}

// Redlock over three independent Redis masters: a lock is held when a
// majority granted it. The API is the same as with New.
func ExampleNewRedlock() {
	var nodes []*redis.Client
	for range 3 {
		srv, err := locktest.Start() // three embedded servers, for the example
		if err != nil {
			panic(err)
		}
		defer srv.Close()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		defer rdb.Close()
		nodes = append(nodes, rdb)
	}
	locks, err := core.NewRedlock(nodes, core.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	lease, err := locks.Acquire(ctx, "order:42")
	if err != nil {
		panic(err)
	}
	_, err = locks.TryAcquire(ctx, "order:42")
	fmt.Println("held by one owner:", errors.Is(err, core.ErrNotAcquired))
	fmt.Println("release:", lease.Release(ctx))
	// Output:
	// held by one owner: true
	// release: <nil>
}

// Work under a lease watches the lease's Context: it ends with cause
// core.ErrLost when the lock can no longer be confirmed, before another
// owner can take it.
func ExampleLease_Context() {
	srv, err := locktest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()

	lease, _ := srv.Client().Acquire(ctx, "order:42")
	_ = srv.LoseLease(ctx, "order:42") // locktest: as if another owner took the lock

	<-lease.Context().Done()
	fmt.Println(context.Cause(lease.Context()))
	// Output: lockkit: lease lost
}

// Claim and Complete: a request retried with the same idempotency key runs
// once. The first claims the record and runs; its answer is stored by
// Complete; the retry gets that answer back without running. (Package
// guard does this in front of a handler: it builds the record key from
// the client's key and the route, and the fingerprint from the request.)
func ExampleClient_Claim() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()

	pay := func(ctx context.Context, idemKey string) (string, error) {
		req := core.ClaimRequest{Fingerprint: "sha256 of the request", Retention: 24 * time.Hour}
		claim, err := locks.Claim(ctx, "pay:"+idemKey, req)
		switch {
		case errors.Is(err, core.ErrNotAcquired):
			return "", fmt.Errorf("in progress, retry later: %w", err) // 409 + Retry-After
		case errors.Is(err, core.ErrFingerprint):
			return "", err // 422: the key was used for another request
		case err != nil:
			return "", err // ErrUnavailable: 503
		case claim.Replayed():
			return string(claim.Payload) + " (replayed)", nil
		}
		// The work runs under the claim's context (lost: it ends) and fences
		// its writes with claim.Token.
		answer := fmt.Sprintf("paid, fenced by a token > 0: %v", claim.Token > 0)
		if err := claim.Lease.Complete(ctx, []byte(answer)); err != nil {
			return "", err // its claim was taken over: the newer owner's answer stands
		}
		return answer, nil
	}

	ctx := context.Background()
	for range 2 {
		answer, err := pay(ctx, "k-123")
		fmt.Println(answer, err)
	}
	// Output:
	// paid, fenced by a token > 0: true <nil>
	// paid, fenced by a token > 0: true (replayed) <nil>
}

// Release of a claim without Complete abandons it (the work failed, a 5xx):
// the next retry runs at once, with a larger fencing token.
func ExampleLease_Complete() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks := srv.Client()
	ctx := context.Background()

	first, err := locks.Claim(ctx, "pay:k-9", core.ClaimRequest{})
	if err != nil {
		panic(err)
	}
	_ = first.Lease.Release(context.WithoutCancel(ctx)) // the work failed: not stored

	retry, err := locks.Claim(ctx, "pay:k-9", core.ClaimRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Println("retry runs:", retry.Lease != nil, "larger token:", retry.Token > first.Token)
	if err := retry.Lease.Complete(ctx, []byte("ok")); err != nil {
		panic(err)
	}
	again, _ := locks.Claim(ctx, "pay:k-9", core.ClaimRequest{})
	fmt.Println("then replayed:", again.Replayed(), string(again.Payload))
	// Output:
	// retry runs: true larger token: true
	// then replayed: true ok
}
