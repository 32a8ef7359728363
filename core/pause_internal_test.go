package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
)

// The renewal goroutine is frozen (as by a long GC pause or a stopped
// thread) past the lease's TTL: the deadline timer, which does not wait on
// renewal I/O, ends the lease on time with ErrLost, and once the goroutine
// runs again it never renews that lease.
func TestFrozenRenewerNeverRenewsALostLease(t *testing.T) {
	srv := redistest.Start(t)
	freeze := make(chan struct{})
	frozen := make(chan struct{}, 1)
	var armed bool
	sent := make(chan int, 16)
	hooks := testHooks{beforeRenewFn: func() {
		if !armed {
			return
		}
		armed = false
		frozen <- struct{}{}
		<-freeze
	}, renewBatchFn: func(n int) { sent <- n }}
	c, err := New(srv.NewClient(), WithTTL(time.Second), withHooks(hooks))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	armed = true // set before the renewal goroutine starts; only it reads it afterwards
	l, err := c.Acquire(ctx, "frozen:1")
	if err != nil {
		t.Fatal(err)
	}
	select { // the renewal goroutine is stuck before picking up its batch
	case <-frozen:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal was due")
	}
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost while the renewer was frozen")
	}
	if !errors.Is(context.Cause(l.Context()), ErrLost) {
		t.Fatalf("cause %v", context.Cause(l.Context()))
	}
	close(freeze)
	// Thawed, it drops the lease that is past its deadline: it sends nothing.
	select {
	case n := <-sent:
		if n != 0 {
			t.Fatalf("the thawed renewer sent %d renewals for a lost lease", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the thawed renewer did not run")
	}
}
