package faults

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Modes of a believed hold of a shared lock (Interval.Mode).
const (
	ModePermit = "permit" // a semaphore's permit
	ModeRead   = "read"   // a read/write lock's read side
	ModeWrite  = "write"  // its write side
)

// Crowd is a moment when more believed holds of one key overlapped than
// its limit allows: Holds are the ones believed at At.
type Crowd struct {
	Key   string
	At    time.Time
	Holds []Interval
}

func (c Crowd) String() string {
	return fmt.Sprintf("%d holders of %q at %s: %v", len(c.Holds), c.Key, c.At.Format("15:04:05.000000"), c.Holds)
}

// Excess returns, per key, each moment more than n believed holds
// overlapped (a semaphore of n admitting too many); at most one Crowd per
// hold that started one. Intervals that only touch do not overlap.
func Excess(ivs []Interval, n int) []Crowd {
	var out []Crowd
	for key, ks := range byKey(ivs) {
		for _, iv := range ks {
			// The holds believed at iv.From (iv itself included): the count
			// only rises at a start, so starts are where to look.
			var at []Interval
			for _, o := range ks {
				if !o.From.After(iv.From) && o.To.After(iv.From) {
					at = append(at, o)
				}
			}
			if len(at) > n {
				out = append(out, Crowd{Key: key, At: iv.From, Holds: at})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// RWConflicts returns every overlap of a write hold with any other hold of
// the same key (readers may overlap each other; a writer overlaps nobody).
func RWConflicts(ivs []Interval) []Overlap {
	var out []Overlap
	for _, o := range Overlaps(ivs) {
		if o.First.Mode == ModeWrite || o.Second.Mode == ModeWrite {
			out = append(out, o)
		}
	}
	return out
}

func byKey(ivs []Interval) map[string][]Interval {
	m := map[string][]Interval{}
	for _, iv := range ivs {
		m[iv.Key] = append(m[iv.Key], iv)
	}
	return m
}

// Excess of the recorded history.
func (h *History) Excess(n int) []Crowd { return Excess(h.Intervals(), n) }

// RWConflicts of the recorded history.
func (h *History) RWConflicts() []Overlap { return RWConflicts(h.Intervals()) }

// BeginGroup records an all-or-nothing hold of several keys (a multi-key
// lease) as one believed hold per key that ends, for every key, when the
// group's belief ends: its context (which ends when any member lease
// ends), its release, or the earliest Until of its members. Overlaps then
// catches a partial hold still believed whole: a key lost and taken by
// another holder while the group went on believing it held them all.
func (h *History) BeginGroup(who string, ctx context.Context, ls ...Lease) *Group {
	g := &Group{}
	for _, l := range ls {
		g.holds = append(g.holds, h.Begin(who, &member{Lease: l, ctx: ctx, all: ls}))
	}
	return g
}

// Group is the recording of one multi-key hold.
type Group struct{ holds []*Hold }

// Released ends the group's belief (call it before releasing).
func (g *Group) Released() {
	for _, hd := range g.holds {
		hd.Released()
	}
}

// Close ends the recording without a release.
func (g *Group) Close() {
	for _, hd := range g.holds {
		hd.Close()
	}
}

// member is one key of a group: its context is the group's and its
// deadline the earliest of the group's.
type member struct {
	Lease
	ctx context.Context
	all []Lease
}

func (m *member) Context() context.Context { return m.ctx }

func (m *member) Until() time.Time {
	u := m.Lease.Until()
	for _, l := range m.all {
		if lu := l.Until(); lu.Before(u) {
			u = lu
		}
	}
	return u
}
