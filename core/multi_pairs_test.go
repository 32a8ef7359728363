package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
)

// TestAcquireAllOverlappingPairs: 36 requests of two Clients take pairs
// of three keys, in both orders, at once, 60 rounds. Besides the canonical
// order, it catches a local queue that counts one holder twice: a queue's
// head whose own attempt wins at the moment a releasing lease of the same
// Client hands it the lock (a holder taken by AcquireAll's one round trip
// makes that frequent). With the holder counted twice the queue waited
// for a release that never came and every later request of the key hung
// (seen as round 11 of 150 timing out, "held=1 waiters=0" with the key
// free in Redis).
func TestAcquireAllOverlappingPairs(t *testing.T) {
	srv := redistest.Start(t)
	pairs := [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "b"}, {"c", "a"}, {"a", "c"}}
	for round := range 60 {
		clients := []*core.Client{
			newClient(t, srv, core.WithTTL(30*time.Second), core.WithObserver(newRecorder())),
			newClient(t, srv, core.WithTTL(30*time.Second), core.WithObserver(newRecorder())),
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		errs := make(chan error, 36)
		for i := range 36 {
			go func() {
				m, err := clients[i%2].AcquireAll(ctx, pairs[i%6])
				if err == nil {
					time.Sleep(time.Millisecond) // the work on both
					err = m.Release(context.Background())
				}
				errs <- err
			}()
		}
		for range 36 {
			if err := <-errs; err != nil {
				cancel()
				t.Fatalf("round %d: %v (queues: %s / %s)", round, err, core.QueueStates(clients[0]), core.QueueStates(clients[1]))
			}
		}
		cancel()
	}
}
