package faults

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// CounterHistory records the read-modify-writes of one counter kept in a
// fenced store (each reads the value and writes it + 1) with their real-time
// intervals, and checks with porcupine that they are linearizable against a
// counter whose increments are atomic: a lost update (a write accepted over
// one its read did not see) makes the history non-linearizable, a refused
// write is a legal no-op. It is the witness of a fenced resource that does
// not take the engine's, or the store's, word for anything: only what each
// call returned and when. It is safe for concurrent use.
type CounterHistory struct {
	start time.Time

	mu    sync.Mutex
	ops   []*Increment
	final *porcupine.Operation
}

// NewCounterHistory returns an empty history; times count from now.
func NewCounterHistory() *CounterHistory { return &CounterHistory{start: time.Now()} }

// Outcome is how an increment ended.
type Outcome int

// How an increment ended.
const (
	Pending Outcome = iota // not ended yet when the history was checked
	Written                // the write was accepted
	Refused                // the read or the write was refused (stale token): nothing changed
	Unknown                // a call failed: the write may have landed, then or later
)

func (o Outcome) String() string {
	return [...]string{"pending", "written", "refused", "unknown"}[o]
}

// Increment is one read-modify-write being recorded.
type Increment struct {
	h    *CounterHistory
	who  string
	call int64

	mu      sync.Mutex
	read    int64
	hasRead bool
	outcome Outcome
	ret     int64
}

func (h *CounterHistory) now() int64 { return int64(time.Since(h.start)) }

// Begin starts recording an increment by who: call it before the read is
// sent.
func (h *CounterHistory) Begin(who string) *Increment {
	op := &Increment{h: h, who: who, call: h.now()}
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
	return op
}

// Read records the value the increment read (it writes v+1).
func (op *Increment) Read(v int64) {
	op.mu.Lock()
	op.read, op.hasRead = v, true
	op.mu.Unlock()
}

// End records how the increment ended: call it after the last reply came
// back (the write's, or the read's when it was refused or failed).
func (op *Increment) End(o Outcome) {
	now := op.h.now()
	op.mu.Lock()
	if op.outcome == Pending {
		op.outcome, op.ret = o, now
	}
	op.mu.Unlock()
}

// Final records a read of the counter after every increment ended.
func (h *CounterHistory) Final(v int64) {
	call := h.now()
	h.mu.Lock()
	h.final = &porcupine.Operation{ClientId: 0, Input: counterIn{final: true}, Call: call, Output: counterOut{read: v, hasRead: true}, Return: h.now()}
	h.mu.Unlock()
}

// CounterStats counts the increments by outcome.
type CounterStats struct {
	Written, Refused, Unknown, Pending int
}

func (s CounterStats) String() string {
	return fmt.Sprintf("%d written, %d refused, %d unknown, %d pending", s.Written, s.Refused, s.Unknown, s.Pending)
}

// Stats counts the increments recorded so far by outcome.
func (h *CounterHistory) Stats() CounterStats {
	var s CounterStats
	for _, op := range h.operations() {
		switch op.Output.(counterOut).outcome {
		case Written:
			s.Written++
		case Refused:
			s.Refused++
		case Unknown:
			s.Unknown++
		case Pending:
			if !op.Input.(counterIn).final {
				s.Pending++
			}
		}
	}
	return s
}

type counterIn struct {
	who   string
	final bool // the final read, not an increment
}

type counterOut struct {
	read    int64
	hasRead bool
	outcome Outcome
}

// operations is the history as porcupine reads it. An increment whose
// outcome is unknown or pending may still land: it returns at the end of
// time.
func (h *CounterHistory) operations() []porcupine.Operation {
	h.mu.Lock()
	ops := append([]*Increment(nil), h.ops...)
	final := h.final
	h.mu.Unlock()
	out := make([]porcupine.Operation, 0, len(ops)+1)
	for i, op := range ops {
		op.mu.Lock()
		o := porcupine.Operation{
			ClientId: i + 1, Input: counterIn{who: op.who}, Call: op.call,
			Output: counterOut{read: op.read, hasRead: op.hasRead, outcome: op.outcome}, Return: op.ret,
		}
		op.mu.Unlock()
		if o.Output.(counterOut).outcome == Pending || o.Output.(counterOut).outcome == Unknown {
			o.Return = math.MaxInt64
		}
		out = append(out, o)
	}
	if final != nil {
		out = append(out, *final)
	}
	return out
}

// counterModel is a counter incremented atomically. Its state is the value;
// an increment is legal where it read the current value, and then adds one
// if written, nothing if refused, either if unknown. An increment refused
// before it read anything (a refused claim) or that failed before reading
// changes nothing.
var counterModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, output any) []any {
		v := state.(int64)
		in, out := input.(counterIn), output.(counterOut)
		switch {
		case in.final:
			if out.read != v {
				return nil
			}
			return []any{v}
		case !out.hasRead:
			return []any{v}
		case out.read != v:
			return nil
		}
		switch out.outcome {
		case Written:
			return []any{v + 1}
		case Refused:
			return []any{v}
		default:
			return []any{v, v + 1}
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(counterIn), output.(counterOut)
		if in.final {
			return fmt.Sprintf("final read %d", out.read)
		}
		if !out.hasRead {
			return fmt.Sprintf("%s: %v before reading", in.who, out.outcome)
		}
		return fmt.Sprintf("%s: read %d, %v", in.who, out.read, out.outcome)
	},
}

// Check runs porcupine over the history (the final read included, if
// recorded), for at most timeout (0: no limit). porcupine.Ok means
// linearizable, porcupine.Illegal not, porcupine.Unknown that the timeout
// ended the search first.
func (h *CounterHistory) Check(timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(counterModel.ToModel(), h.operations(), timeout)
}

// String lists the increments in call order, for a failure message: all
// of them when there are few, else those that overlap another in time
// (where two holders were at once, and a lost update must be).
func (h *CounterHistory) String() string {
	ops := h.operations()
	show := make([]bool, len(ops))
	for i := range ops {
		show[i] = len(ops) <= 50
		for j := 0; j < len(ops) && !show[i]; j++ {
			show[i] = i != j && ops[i].Call <= ops[j].Return && ops[j].Call <= ops[i].Return
		}
	}
	var b strings.Builder
	omitted := 0
	for i, op := range ops {
		if !show[i] {
			omitted++
			continue
		}
		ret := "never"
		if op.Return != math.MaxInt64 {
			ret = time.Duration(op.Return).String()
		}
		fmt.Fprintf(&b, "[%v, %s] %s\n", time.Duration(op.Call), ret, counterModel.DescribeOperation(op.Input, op.Output))
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "(%d increments that overlap no other left out)\n", omitted)
	}
	return b.String()
}
