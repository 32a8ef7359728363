package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLease is a Lease whose deadline and end the test controls.
type fakeLease struct {
	key    string
	token  int64
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	until  time.Time
}

func newFake(key string, token int64, until time.Time) *fakeLease {
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeLease{key: key, token: token, ctx: ctx, cancel: cancel, until: until}
}

func (f *fakeLease) Key() string              { return f.key }
func (f *fakeLease) Token() int64             { return f.token }
func (f *fakeLease) Context() context.Context { return f.ctx }
func (f *fakeLease) Until() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.until
}
func (f *fakeLease) setUntil(t time.Time) {
	f.mu.Lock()
	f.until = t
	f.mu.Unlock()
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestOverlapsDetectsOverlapOnly(t *testing.T) {
	ivs := []Interval{
		{Key: "a", Who: "p", Token: 1, From: at(0), To: at(100)},
		{Key: "a", Who: "q", Token: 2, From: at(100), To: at(200)}, // touches: fine
		{Key: "a", Who: "r", Token: 3, From: at(150), To: at(160)}, // inside q's
		{Key: "b", Who: "s", Token: 1, From: at(0), To: at(1000)},  // another key
		{Key: "a", Who: "t", Token: 4, From: at(300), To: at(400)},
	}
	got := Overlaps(ivs)
	if len(got) != 1 || got[0].First.Who != "q" || got[0].Second.Who != "r" {
		t.Fatalf("overlaps = %v", got)
	}
	if !strings.Contains(got[0].String(), "overlap of 10ms") {
		t.Fatalf("String = %q", got[0])
	}
	// A long interval overlapping several later ones is reported with each.
	ivs = append(ivs, Interval{Key: "a", Who: "u", Token: 9, From: at(50), To: at(350)})
	if n := len(Overlaps(ivs)); n != 5 { // u with p, q, r, t; q with r
		t.Fatalf("%d overlaps, want 5: %v", n, Overlaps(ivs))
	}
	if n := len(Overlaps(nil)); n != 0 {
		t.Fatal(n)
	}
}

func TestTokenInversions(t *testing.T) {
	ivs := []Interval{
		{Key: "a", Who: "p", Token: 10, From: at(0), To: at(10)},
		{Key: "a", Who: "q", Token: 20, From: at(20), To: at(30)},
		{Key: "a", Who: "r", Token: 15, From: at(40), To: at(50)}, // backwards
		{Key: "a", Who: "s", Token: 15, From: at(60), To: at(70)}, // equal, another holder
		{Key: "a", Who: "s", Token: 15, From: at(80), To: at(90)}, // equal, same holder: fine
		{Key: "b", Who: "t", Token: 1, From: at(0), To: at(10)},   // another key: fine
	}
	got := TokenInversions(ivs)
	if len(got) != 2 || got[0].Later.Who != "r" || got[1].Later.Who != "s" {
		t.Fatalf("inversions = %v", got)
	}
}

// A believed hold ends at the earliest of release, context end and the
// deadline read when it closes.
func TestHoldEndsAtEarliest(t *testing.T) {
	h := NewHistory()
	now := time.Now()

	// Released before the deadline: cut at the release.
	l1 := newFake("k", 1, now.Add(time.Hour))
	hd1 := h.Begin("released", l1)
	hd1.Released()
	l1.cancel()
	iv := hd1.Interval()
	if iv.End != EndReleased || iv.To.After(time.Now()) || iv.To.Before(iv.From) {
		t.Fatalf("released: %v", iv)
	}

	// Context ended (lost) before the deadline: cut at the context's end.
	l2 := newFake("k", 2, time.Now().Add(time.Hour))
	hd2 := h.Begin("lost", l2)
	l2.cancel()
	lostBy := time.Now()
	hd2.Close()
	if iv := hd2.Interval(); iv.End != EndContext || iv.To.After(lostBy.Add(time.Second)) {
		t.Fatalf("lost: %v", iv)
	}

	// Frozen past the deadline: the context ends late, the deadline cuts.
	dl := time.Now().Add(-time.Minute)
	l3 := newFake("k", 3, dl)
	hd3 := h.Begin("frozen", l3)
	l3.cancel()
	hd3.Close()
	if iv := hd3.Interval(); iv.End != EndUntil || !iv.To.Equal(dl) {
		t.Fatalf("frozen: %v", iv)
	}

	// Until is read when the hold closes: renewals before that count.
	l4 := newFake("k4", 4, time.Now().Add(time.Second))
	hd4 := h.Begin("renewed", l4)
	later := time.Now().Add(time.Hour)
	l4.setUntil(later)
	if iv := hd4.Interval(); iv.End != EndOpen || !iv.To.Equal(later) {
		t.Fatalf("open: %v", iv)
	}
	hd4.Close()
	l4.setUntil(later.Add(time.Hour)) // after Close: ignored
	if iv := hd4.Interval(); iv.End != EndUntil || !iv.To.Equal(later) {
		t.Fatalf("closed: %v", iv)
	}
	hd4.Released() // after Close: no effect
	if iv := hd4.Interval(); iv.End != EndUntil {
		t.Fatalf("Released after Close changed the hold: %v", iv)
	}
	l4.cancel()

	if n := len(h.Intervals()); n != 4 {
		t.Fatalf("%d intervals", n)
	}
}

// The recorder catches a holder that keeps believing after another took the
// lock (here: a deadline far in the future, never released), and not a
// clean hand-off.
func TestHistoryCatchesBelievedOverlap(t *testing.T) {
	h := NewHistory()
	a := newFake("k", 1, time.Now().Add(time.Hour))
	ha := h.Begin("a", a)
	b := newFake("k", 2, time.Now().Add(time.Hour))
	hb := h.Begin("b", b)
	ov := h.Overlaps()
	if len(ov) != 1 || ov[0].First.Who != "a" || ov[0].Second.Who != "b" {
		t.Fatalf("overlaps = %v", ov)
	}
	ha.Released()
	hb.Released()
	a.cancel()
	b.cancel()

	clean := NewHistory()
	c := newFake("k", 1, time.Now().Add(time.Hour))
	clean.Begin("c", c).Released()
	d := newFake("k", 2, time.Now().Add(time.Hour))
	clean.Begin("d", d).Released()
	c.cancel()
	d.cancel()
	if ov := clean.Overlaps(); len(ov) != 0 {
		t.Fatalf("hand-off reported as overlap: %v", ov)
	}
	if inv := clean.TokenInversions(); len(inv) != 0 {
		t.Fatalf("inversions %v", inv)
	}
	// Intervals reported by another process count like local ones.
	now := time.Now()
	clean.Add(Interval{Key: "k", Who: "child", Token: 1, From: now, To: now.Add(time.Hour)})
	clean.Add(Interval{Key: "k", Who: "child2", Token: 5, From: now.Add(time.Minute), To: now.Add(2 * time.Minute)})
	ov, inv := clean.Overlaps(), clean.TokenInversions()
	if len(ov) != 1 || ov[0].First.Who != "child" || ov[0].Duration() != time.Minute ||
		len(inv) != 1 || inv[0].Earlier.Who != "d" || inv[0].Later.Who != "child" {
		t.Fatalf("external intervals: %v %v", ov, inv)
	}
}
