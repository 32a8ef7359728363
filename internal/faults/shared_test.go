package faults

import (
	"context"
	"testing"
	"time"
)

func TestExcessAndRWConflicts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	iv := func(who string, from, to int, mode string) Interval {
		return Interval{Key: "k", Who: who, From: at(from), To: at(to), Mode: mode}
	}
	ivs := []Interval{
		iv("a", 0, 100, ModePermit), iv("b", 10, 50, ModePermit), iv("c", 50, 120, ModePermit), // 2 at once
		iv("d", 60, 70, ModePermit), // a, c, d: 3
	}
	if c := Excess(ivs, 2); len(c) != 1 || c[0].At != at(60) || len(c[0].Holds) != 3 {
		t.Fatalf("Excess(2) = %v", c)
	}
	if c := Excess(ivs, 3); len(c) != 0 {
		t.Fatalf("Excess(3) = %v", c)
	}
	rw := []Interval{iv("r1", 0, 100, ModeRead), iv("r2", 10, 90, ModeRead), iv("w", 100, 150, ModeWrite), iv("r3", 149, 160, ModeRead)}
	if o := RWConflicts(rw); len(o) != 1 || o[0].First.Who != "w" || o[0].Second.Who != "r3" {
		t.Fatalf("RWConflicts = %v", o)
	}
}

// TestGroupEndsForEveryKey: a group's belief in each key ends when the
// group's context ends, even while the key's own lease goes on; a holder
// of the other key that begins after that is no overlap, and one that
// begins before it is.
func TestGroupEndsForEveryKey(t *testing.T) {
	far := time.Now().Add(time.Hour)
	a, b := newFake("a", 1, far), newFake("b", 1, far) // their own leases go on
	gctx, lose := context.WithCancel(context.Background())
	h := NewHistory()
	g := h.BeginGroup("group", gctx, a, b)
	early := h.Begin("early", newFake("b", 2, far))
	early.Released()
	lose()    // the group lost one key: its belief in both ends
	g.Close() // records the end no later than now
	late := h.Begin("late", newFake("a", 3, far))
	late.Released()
	ov := h.Overlaps()
	if len(ov) != 1 || ov[0].Second.Who != "early" {
		t.Fatalf("overlaps %v, want only the early holder of b", ov)
	}
}
