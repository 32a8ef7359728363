package faults

import (
	"fmt"
	"sort"
	"sync"
)

// Ledger is the witness of work that must be done once per id, such as a
// payment retried under an idempotency key: it counts, per id, the runs
// of its handler, and how each run ended: it applied the work (its write
// was accepted), found it applied by an earlier run (one that crashed or
// stalled after writing, before its answer was stored), or was refused
// (its fenced write or read came after a newer owner's). It takes no
// engine's word: the handler tells it what its own store calls returned.
// It is safe for concurrent use.
type Ledger struct {
	mu  sync.Mutex
	ids map[string]*LedgerEntry
}

// LedgerEntry is what a Ledger counted for one id.
type LedgerEntry struct {
	Runs      int // handler runs (claims that ran the work)
	TakenOver int // of them, runs that took the record over from an expired claim
	Applied   int // runs whose write was accepted
	Found     int // runs that found the work applied already and wrote nothing
	Refused   int // runs whose fenced read or write was refused
}

// NewLedger returns a Ledger expecting ids, each to be applied once.
func NewLedger(ids ...string) *Ledger {
	l := &Ledger{ids: map[string]*LedgerEntry{}}
	for _, id := range ids {
		l.ids[id] = &LedgerEntry{}
	}
	return l
}

func (l *Ledger) entry(id string) *LedgerEntry {
	e := l.ids[id]
	if e == nil {
		e = &LedgerEntry{}
		l.ids[id] = e
	}
	return e
}

func (l *Ledger) count(id string, f func(e *LedgerEntry)) {
	l.mu.Lock()
	f(l.entry(id))
	l.mu.Unlock()
}

// Ran records a run of id's handler; takenOver: its claim took over an
// expired one.
func (l *Ledger) Ran(id string, takenOver bool) {
	l.count(id, func(e *LedgerEntry) {
		e.Runs++
		if takenOver {
			e.TakenOver++
		}
	})
}

// Applied records a run whose write was accepted.
func (l *Ledger) Applied(id string) { l.count(id, func(e *LedgerEntry) { e.Applied++ }) }

// Found records a run that found id applied and wrote nothing.
func (l *Ledger) Found(id string) { l.count(id, func(e *LedgerEntry) { e.Found++ }) }

// Refused records a run whose fenced read or write was refused.
func (l *Ledger) Refused(id string) { l.count(id, func(e *LedgerEntry) { e.Refused++ }) }

// Entry returns what was counted for id.
func (l *Ledger) Entry(id string) LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.entry(id)
}

// NotOnce lists, sorted, every id applied other than exactly once: twice
// or more (the work was done again), or never (expected by NewLedger, or
// run, and no write accepted).
func (l *Ledger) NotOnce() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id, e := range l.ids {
		if e.Applied != 1 {
			out = append(out, fmt.Sprintf("%s applied %d times (%v)", id, e.Applied, *e))
		}
	}
	sort.Strings(out)
	return out
}

// Totals sums every id's counts.
func (l *Ledger) Totals() LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t LedgerEntry
	for _, e := range l.ids {
		t.Runs += e.Runs
		t.TakenOver += e.TakenOver
		t.Applied += e.Applied
		t.Found += e.Found
		t.Refused += e.Refused
	}
	return t
}

// Len is how many ids the Ledger knows.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

func (e LedgerEntry) String() string {
	return fmt.Sprintf("%d runs (%d taken over): %d applied, %d found applied, %d refused",
		e.Runs, e.TakenOver, e.Applied, e.Found, e.Refused)
}
