package faults

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// step is one event of a hand-written history: who begins, reads, or ends.
type step struct {
	who  string
	kind string // "begin", "read", "end"
	v    int64
	o    Outcome
}

func play(steps []step, final int64) porcupine.CheckResult {
	h := NewCounterHistory()
	ops := map[string]*Increment{}
	for _, s := range steps {
		switch s.kind {
		case "begin":
			ops[s.who] = h.Begin(s.who)
		case "read":
			ops[s.who].Read(s.v)
		case "end":
			ops[s.who].End(s.o)
		}
	}
	if final >= 0 {
		h.Final(final)
	}
	return h.Check(0)
}

func begin(who string) step                     { return step{who: who, kind: "begin"} }
func read(who string, v int64) step             { return step{who: who, kind: "read", v: v} }
func end(who string, o Outcome) step            { return step{who: who, kind: "end", o: o} }
func inc(who string, v int64, o Outcome) []step { return []step{begin(who), read(who, v), end(who, o)} }

func TestCounterHistoryJudges(t *testing.T) {
	cat := func(parts ...[]step) []step {
		var out []step
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		steps []step
		final int64
		want  porcupine.CheckResult
	}{
		{"serial increments", cat(inc("a", 0, Written), inc("b", 1, Written), inc("c", 2, Written)), 3, porcupine.Ok},
		{"final read short of the writes", cat(inc("a", 0, Written), inc("b", 1, Written)), 1, porcupine.Illegal},
		{"read of a value the counter never had", inc("a", 5, Written), 6, porcupine.Illegal},
		// The interleaving fencing exists for: A reads, B reads, A writes, B writes.
		{"lost update", []step{begin("a"), read("a", 0), begin("b"), read("b", 0), end("a", Written), end("b", Written)}, 1, porcupine.Illegal},
		{"lost update, no final read", []step{begin("a"), read("a", 0), begin("b"), read("b", 0), end("a", Written), end("b", Written)}, -1, porcupine.Illegal},
		{"the older write refused", []step{begin("a"), read("a", 0), begin("b"), read("b", 0), end("a", Refused), end("b", Written)}, 1, porcupine.Ok},
		{"refused after reading a value it never had", []step{begin("a"), read("a", 9), end("a", Refused)}, 0, porcupine.Illegal},
		{"refused before reading", []step{begin("a"), end("a", Refused), begin("b"), read("b", 0), end("b", Written)}, 1, porcupine.Ok},
		// Unknown: the write may land at any time later, or never.
		{"unknown, landed later", []step{begin("a"), read("a", 0), end("a", Unknown), begin("b"), read("b", 1), end("b", Written)}, 2, porcupine.Ok},
		{"unknown, never landed", []step{begin("a"), read("a", 0), end("a", Unknown), begin("b"), read("b", 0), end("b", Written)}, 1, porcupine.Ok},
		{"unknown cannot explain a lost update", []step{begin("a"), read("a", 0), begin("b"), read("b", 0), end("b", Written), end("a", Written), begin("c"), read("c", 1), end("c", Unknown)}, 2, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := play(tc.steps, tc.final); got != tc.want {
				t.Fatalf("porcupine says %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCounterHistoryStats(t *testing.T) {
	h := NewCounterHistory()
	for _, o := range []Outcome{Written, Written, Refused, Unknown} {
		op := h.Begin("w")
		op.Read(0)
		op.End(o)
	}
	h.Begin("late")
	h.Final(2)
	if s := h.Stats(); s != (CounterStats{Written: 2, Refused: 1, Unknown: 1, Pending: 1}) {
		t.Fatalf("stats %v", s)
	}
}

// A long history's message keeps the increments that overlap another.
func TestCounterHistoryString(t *testing.T) {
	h := NewCounterHistory()
	for i := range 60 {
		op := h.Begin("serial")
		op.Read(int64(i))
		op.End(Written)
	}
	a, b := h.Begin("a"), h.Begin("b")
	a.Read(60)
	b.Read(60)
	a.End(Written)
	b.End(Written)
	s := h.String()
	if !strings.Contains(s, "a: read 60, written") || !strings.Contains(s, "b: read 60, written") ||
		!strings.Contains(s, "increments that overlap no other left out") {
		t.Fatalf("String():\n%s", s)
	}
}
