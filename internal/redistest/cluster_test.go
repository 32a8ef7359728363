package redistest

import (
	"context"
	"testing"
	"time"
)

// A 3-master cluster with one replica each comes up healthy; a slot moves
// with its key, and a manual failover swaps a master and its replica.
func TestCluster(t *testing.T) {
	c := StartCluster(t, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if n := len(c.Masters()); n != 3 {
		t.Fatalf("%d masters, want 3", n)
	}
	if err := c.Client.Set(ctx, "{moving}k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot := c.Slot("{moving}k")
	from := c.Master(slot)
	var to *Server
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}
	c.MoveSlot(slot, to)
	if got := c.Master(slot); got != to {
		t.Fatalf("slot %d on %s after the move, want %s", slot, got.Addr(), to.Addr())
	}
	if v, err := c.Client.Get(ctx, "{moving}k").Result(); err != nil || v != "v" {
		t.Fatalf("after the move: %q %v", v, err)
	}
	reps := c.ReplicaOf(to)
	if len(reps) != 1 {
		t.Fatalf("%d replicas of %s, want 1", len(reps), to.Addr())
	}
	c.Failover(reps[0])
	if got := c.Master(slot); got != reps[0] {
		t.Fatalf("slot %d on %s after the failover, want %s", slot, got.Addr(), reps[0].Addr())
	}
	if v, err := c.Client.Get(ctx, "{moving}k").Result(); err != nil || v != "v" {
		t.Fatalf("after the failover: %q %v", v, err)
	}
}
