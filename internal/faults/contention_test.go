package faults

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The checker flags a refusal with no holder of its key during the wait,
// and only that: a hold before it ended, a hold of another key and a
// refusal with no hold at all are unfounded; one overlapping a hold in
// progress or one never released is founded.
func TestContentionUnfounded(t *testing.T) {
	c := NewContention()
	held := errors.New("held")
	c.mu.Lock()
	c.holds = []holdSpan{
		{key: "a", who: "p", from: at(0), to: at(100)},
		{key: "b", who: "q", from: at(0), to: at(1000)},
		{key: "c", who: "r", from: at(500)}, // never released
	}
	c.refusals = []Refusal{
		{Key: "a", Who: "w1", From: at(50), To: at(150), Err: held.Error()},    // overlaps p: founded
		{Key: "a", Who: "w2", From: at(100), To: at(400), Err: held.Error()},   // p released as it began: unfounded
		{Key: "a", Who: "w3", From: at(200), To: at(500), Err: held.Error()},   // after p: unfounded
		{Key: "d", Who: "w4", From: at(0), To: at(500), Err: held.Error()},     // nobody ever held d: unfounded
		{Key: "c", Who: "w5", From: at(0), To: at(501), Err: held.Error()},     // r began before it ended: founded
		{Key: "c", Who: "w6", From: at(2000), To: at(2100), Err: held.Error()}, // r still holds: founded
		{Key: "c", Who: "w7", From: at(0), To: at(500), Err: held.Error()},     // ended as r began: unfounded
	}
	c.mu.Unlock()
	var who []string
	for _, r := range c.Unfounded() {
		who = append(who, r.Who)
	}
	if got := strings.Join(who, " "); got != "w2 w3 w7 w4" {
		t.Fatalf("unfounded refusals %q, want w2 w3 w7 w4", got)
	}
	if s := c.Refusals()[0].String(); !strings.Contains(s, `w1 refused on "a"`) || !strings.Contains(s, "held") {
		t.Fatalf("String = %q", s)
	}

	// Recorded live: a hold released before the refusal began does not found it.
	live := NewContention()
	from := time.Now()
	done := live.Held("k", "p", from)
	live.Refused("k", "w", from, held)
	done()
	live.Refused("k", "late", live.holds[0].to.Add(1), held)
	if u := live.Unfounded(); len(u) != 1 || u[0].Who != "late" {
		t.Fatalf("unfounded %v, want only the refusal after the release", u)
	}
}
