package faults

import (
	"slices"
	"strings"
	"testing"
)

// The Ledger reports an id applied twice and an expected id never
// applied, and nothing for ids applied once however often they ran.
func TestLedgerNotOnce(t *testing.T) {
	l := NewLedger("once", "twice", "never", "found")
	l.Ran("once", false)
	l.Applied("once")
	for range 2 {
		l.Ran("twice", false)
		l.Applied("twice")
	}
	l.Ran("never", false)
	l.Refused("never")
	l.Ran("found", false)
	l.Applied("found")
	l.Ran("found", true)
	l.Found("found")

	got := l.NotOnce()
	if len(got) != 2 || !strings.HasPrefix(got[0], "never applied 0 times") || !strings.HasPrefix(got[1], "twice applied 2 times") {
		t.Fatalf("NotOnce = %q, want never and twice", got)
	}
	if e := l.Entry("found"); e != (LedgerEntry{Runs: 2, TakenOver: 1, Applied: 1, Found: 1}) {
		t.Errorf("found: %+v", e)
	}
	if tot := l.Totals(); tot.Runs != 6 || tot.Applied != 4 || tot.Refused != 1 || l.Len() != 4 {
		t.Errorf("totals %v over %d ids", tot, l.Len())
	}
	if !slices.IsSorted(got) {
		t.Errorf("not sorted: %q", got)
	}
}
