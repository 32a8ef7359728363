package faults

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestResourceRejectsStaleTokens(t *testing.T) {
	r := NewResource()
	s := r.Read("k")
	if err := r.Write("k", 10, s, 1); err != nil {
		t.Fatal(err)
	}
	s = r.Read("k")
	if err := r.Write("k", 10, s, 2); err != nil { // same holder again
		t.Fatal(err)
	}
	err := r.Write("k", 9, r.Read("k"), 99)
	if !errors.Is(err, ErrStaleToken) {
		t.Fatalf("stale write = %v", err)
	}
	if r.Value("k") != 2 {
		t.Fatalf("stale write changed the value to %d", r.Value("k"))
	}
	if err := r.Write("other", 1, r.Read("other"), 1); err != nil { // per key
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Accepted != 3 || st.Rejected != 1 || st.LostUpdates != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Two read-modify-writes that interleave: the second (higher token) writes
// over the first one's write it never read: one lost update.
func TestResourceCountsLostUpdates(t *testing.T) {
	r := NewResource()
	a := r.Read("k")
	b := r.Read("k")
	if err := r.Write("k", 1, a, a.Value+1); err != nil {
		t.Fatal(err)
	}
	if err := r.Write("k", 2, b, b.Value+1); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.LostUpdates != 1 || r.Value("k") != 1 {
		t.Fatalf("stats %+v value %d", st, r.Value("k"))
	}
}

// Unsynchronised read-modify-writes with one token (no lock) lose updates,
// and the checker sees them: increments missing from the value come with
// counted lost updates. (Checks the checker, under -race.)
func TestResourceLostUpdatesUnderRace(t *testing.T) {
	r := NewResource()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 20 {
				_ = r.Increment("k", 1, time.Millisecond)
			}
		}()
	}
	close(start)
	wg.Wait()
	st := r.Stats()
	if st.Accepted != 80 || st.Rejected != 0 {
		t.Fatalf("stats %+v", st)
	}
	missing := st.Accepted - r.Value("k")
	if missing == 0 || st.LostUpdates == 0 {
		t.Fatalf("%d lost updates counted, %d increments missing: 4 writers sleeping mid-update must collide", st.LostUpdates, missing)
	}
	// Serial increments lose nothing.
	s := NewResource()
	for range 100 {
		if err := s.Increment("k", 5, 0); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.LostUpdates != 0 || s.Value("k") != 100 {
		t.Fatalf("serial: %+v value %d", st, s.Value("k"))
	}
}
