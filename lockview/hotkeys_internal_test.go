package lockview

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

// end feeds rec one acquire of key under name that ended at at after
// waiting wait.
func end(rec *recorder, key, name string, at time.Time, wait time.Duration) {
	a := core.AcquireInfo{Key: key, Name: name, Start: at.Add(-wait)}
	rec.AcquireEnd(context.Background(), a, core.AcquireResult{Outcome: core.OutcomeAcquired, Waited: wait, Token: 1})
}

func row(t *testing.T, rows []HotKey, key string) HotKey {
	t.Helper()
	for _, h := range rows {
		if h.Key == key {
			return h
		}
	}
	t.Fatalf("no row for %s in %+v", key, rows)
	return HotKey{}
}

// A key touched by several routes shows all of them, the same set in the
// same order whichever route touched it last; a fifth name is "more".
func TestKeyNamesAreOneSet(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var seen [][]string
	for i, name := range []string{"POST /orders/:id/refund", "POST /orders/:id/pay", "POST /orders/:id/refund", "POST /orders/:id/pay"} {
		end(v.rec, "order:h2", name, now.Add(time.Duration(i)*time.Millisecond), time.Millisecond)
		rows, _ := v.rec.hotKeys(now.Add(time.Second), true)
		seen = append(seen, row(t, rows, "order:h2").Names)
	}
	want := []string{"POST /orders/:id/pay", "POST /orders/:id/refund"}
	for i, names := range seen[1:] {
		if !slices.Equal(names, want) {
			t.Errorf("after acquire %d: names %q, want %q whichever route was last", i+2, names, want)
		}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		end(v.rec, "order:h2", name, now, time.Millisecond)
	}
	rows, _ := v.rec.hotKeys(now.Add(time.Second), true)
	if h := row(t, rows, "order:h2"); len(h.Names) != maxNames || !h.MoreNames || !slices.IsSorted(h.Names) {
		t.Errorf("names %q more %v: want the first %d sorted, and more", h.Names, h.MoreNames, maxNames)
	}
}

// A key with more acquires in the window than it keeps says so (Capped)
// and how far back its samples go; one with fewer covers the window.
func TestHotKeyWindowIsHonest(t *testing.T) {
	v, err := New(WithSamples(8), WithWindow(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 20 { // one every 100ms, the last 8 span 700ms
		end(v.rec, "busy", "n", now.Add(time.Duration(i-19)*100*time.Millisecond), time.Millisecond)
	}
	for i := range 3 {
		end(v.rec, "calm", "n", now.Add(-time.Duration(i)*time.Second), time.Millisecond)
	}
	rows, _ := v.rec.hotKeys(now, true)
	busy, calm := row(t, rows, "busy"), row(t, rows, "calm")
	if !busy.Capped || busy.Acquires != 8 || busy.Covers != 700 {
		t.Errorf("busy: capped %v, %d acquires covering %v ms; want the last 8 over 700 ms", busy.Capped, busy.Acquires, busy.Covers)
	}
	if calm.Capped || calm.Acquires != 3 || calm.Covers != 60000 {
		t.Errorf("calm: capped %v, %d acquires covering %v ms; want all 3 of the 60 s window", calm.Capped, calm.Acquires, calm.Covers)
	}
}

// Contended keys come first whatever the others waited; without all only
// they are listed and the others counted. The index counts the contended
// keys the page lists: not one whose only acquire is still waiting.
func TestContendedKeysFirst(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	end(v.rec, "cold:slow", "n", now, 500*time.Millisecond) // waited long (a slow Redis), met nobody
	a := core.AcquireInfo{Key: "hot", Name: "n", Start: now}
	v.rec.Contended(context.Background(), a, core.Holder{Owner: "B", Token: 2, Seen: now}, 1)
	end(v.rec, "hot", "n", now, 5*time.Millisecond)
	end(v.rec, "cold:fast", "n", now, time.Millisecond)
	queued := core.AcquireInfo{Key: "queued", Name: "n", Start: now} // met a holder, has not ended
	v.rec.Contended(context.Background(), queued, core.Holder{Owner: "B", Token: 3, Seen: now}, 1)

	rows, hidden := v.rec.hotKeys(now, true)
	if len(rows) != 3 || rows[0].Key != "hot" || !rows[0].Contended || rows[1].Key != "cold:slow" || rows[1].Contended || hidden != 0 {
		t.Errorf("all: %+v (hidden %d); want hot (contended), then cold:slow, cold:fast", rows, hidden)
	}
	rows, hidden = v.rec.hotKeys(now, false)
	if len(rows) != 1 || rows[0].Key != "hot" || hidden != 2 {
		t.Errorf("contended only: %+v, hidden %d; want hot, 2 hidden", rows, hidden)
	}
	if n := v.rec.contendedKeys(now); n != 1 {
		t.Errorf("contended keys %d, want 1 (hot; queued has no row)", n)
	}
}
