package faults

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Lease is what History needs of a held lock; *core.Lease satisfies it.
type Lease interface {
	Key() string
	Token() int64
	// Context ends when the holder stops believing it holds the lock.
	Context() context.Context
	// Until is the local validity deadline: the holder may believe in the
	// lock until then at most.
	Until() time.Time
}

// End says what ended a believed hold.
type End string

// How a believed hold ended (the earliest of them wins).
const (
	EndOpen     End = "open"     // not ended yet when the history was read (cut at Until)
	EndReleased End = "released" // the holder released it
	EndUntil    End = "until"    // the local deadline passed first
	EndContext  End = "context"  // the lease's context ended (loss, close)
)

// Interval is one believed hold: Who believed it held Key with Token during
// [From, To).
type Interval struct {
	Key   string
	Who   string
	Token int64
	From  time.Time
	To    time.Time
	End   End
	// Mode is what the hold was on a shared lock: ModeRead, ModeWrite or
	// ModePermit (History.BeginMode); "" for a mutex.
	Mode string
}

func (iv Interval) String() string {
	s := fmt.Sprintf("%s on %q token %d [%s, %s)", iv.Who, iv.Key, iv.Token,
		iv.From.Format("15:04:05.000000"), iv.To.Format("15:04:05.000000"))
	if iv.End != "" {
		s += " " + string(iv.End)
	}
	return s
}

// History records believed holds. It is safe for concurrent use.
type History struct {
	mu    sync.Mutex
	holds []*Hold
	ext   []Interval
}

// NewHistory returns an empty History.
func NewHistory() *History { return &History{} }

// Hold is one believed hold being recorded.
type Hold struct {
	l    Lease
	who  string
	mode string
	from time.Time

	mu       sync.Mutex
	ctxEnd   time.Time
	released time.Time
	until    time.Time
	closed   bool
	stop     func() bool
}

// Begin starts recording a hold of l by who, from now: call it as soon as
// Acquire returned the lease.
func (h *History) Begin(who string, l Lease) *Hold { return h.BeginMode(who, "", l) }

// BeginMode is Begin for a hold of a shared lock: mode is ModeRead,
// ModeWrite or ModePermit, which Excess and RWConflicts judge by.
func (h *History) BeginMode(who, mode string, l Lease) *Hold {
	hd := &Hold{l: l, who: who, mode: mode, from: time.Now()}
	hd.stop = context.AfterFunc(l.Context(), func() {
		now := time.Now()
		hd.mu.Lock()
		if hd.ctxEnd.IsZero() {
			hd.ctxEnd = now
		}
		hd.mu.Unlock()
	})
	h.mu.Lock()
	h.holds = append(h.holds, hd)
	h.mu.Unlock()
	return hd
}

// Released marks the end of the belief: call it when the holder decides to
// release, before sending the release. It also closes the hold.
func (hd *Hold) Released() {
	now := time.Now()
	hd.mu.Lock()
	if hd.released.IsZero() && !hd.closed {
		hd.released = now
	}
	hd.mu.Unlock()
	hd.Close()
}

// Close ends the recording without a release (the lease was lost, or the
// holder is done looking at it): the lease's Until is read now.
func (hd *Hold) Close() {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.closed {
		return
	}
	hd.closed = true
	hd.until = hd.l.Until()
	if hd.stop() {
		return // the context had not ended
	}
	// The context ended: the AfterFunc ran, or waits for hd.mu; the end was
	// not later than now.
	if hd.ctxEnd.IsZero() {
		hd.ctxEnd = time.Now()
	}
}

// Interval returns the hold as an interval: ended at the earliest of its
// release, its context's end and its Until (read at Close, or now when
// still open).
func (hd *Hold) Interval() Interval {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	until, end := hd.until, EndUntil
	if !hd.closed {
		until, end = hd.l.Until(), EndOpen
	}
	iv := Interval{Key: hd.l.Key(), Who: hd.who, Token: hd.l.Token(), From: hd.from, To: until, End: end, Mode: hd.mode}
	if !hd.ctxEnd.IsZero() && hd.ctxEnd.Before(iv.To) {
		iv.To, iv.End = hd.ctxEnd, EndContext
	}
	if !hd.released.IsZero() && !hd.released.After(iv.To) {
		iv.To, iv.End = hd.released, EndReleased
	}
	return iv
}

// Add records a hold observed elsewhere (another process reported it).
func (h *History) Add(iv Interval) {
	h.mu.Lock()
	h.ext = append(h.ext, iv)
	h.mu.Unlock()
}

// Intervals returns every recorded hold, ordered by key then start.
func (h *History) Intervals() []Interval {
	h.mu.Lock()
	holds := append([]*Hold(nil), h.holds...)
	out := append([]Interval(nil), h.ext...)
	h.mu.Unlock()
	for _, hd := range holds {
		out = append(out, hd.Interval())
	}
	sortIntervals(out)
	return out
}

func sortIntervals(ivs []Interval) {
	sort.SliceStable(ivs, func(i, j int) bool {
		if ivs[i].Key != ivs[j].Key {
			return ivs[i].Key < ivs[j].Key
		}
		return ivs[i].From.Before(ivs[j].From)
	})
}

// Overlap is two believed holds of one key at once.
type Overlap struct {
	First, Second Interval
}

// Duration is how long both believed at once.
func (o Overlap) Duration() time.Duration {
	end := o.First.To
	if o.Second.To.Before(end) {
		end = o.Second.To
	}
	return end.Sub(o.Second.From)
}

func (o Overlap) String() string {
	return fmt.Sprintf("overlap of %v: %s and %s", o.Duration(), o.First, o.Second)
}

// Overlaps returns every pair of intervals of one key that overlap (the
// first ends after the second starts). Intervals that only touch do not.
func Overlaps(ivs []Interval) []Overlap {
	ivs = append([]Interval(nil), ivs...)
	sortIntervals(ivs)
	var out []Overlap
	for i := range ivs {
		for j := i + 1; j < len(ivs) && ivs[j].Key == ivs[i].Key; j++ {
			if ivs[i].To.After(ivs[j].From) && ivs[j].To.After(ivs[i].From) {
				out = append(out, Overlap{ivs[i], ivs[j]})
			}
		}
	}
	return out
}

// Inversion is a hold that started after another of the same key with a
// fencing token not above it.
type Inversion struct {
	Earlier, Later Interval
}

func (v Inversion) String() string {
	return fmt.Sprintf("token not increasing: %s then %s", v.Earlier, v.Later)
}

// TokenInversions returns, for every key, each hold whose token is not above
// the token of the hold that started just before it. Holds with the same
// token (reentrant nesting, the same lease recorded twice) do not count when
// they are by the same holder.
func TokenInversions(ivs []Interval) []Inversion {
	ivs = append([]Interval(nil), ivs...)
	sortIntervals(ivs)
	var out []Inversion
	for i := 1; i < len(ivs); i++ {
		a, b := ivs[i-1], ivs[i]
		if a.Key != b.Key {
			continue
		}
		if b.Token < a.Token || (b.Token == a.Token && a.Who != b.Who) {
			out = append(out, Inversion{a, b})
		}
	}
	return out
}

// Overlaps of the recorded history.
func (h *History) Overlaps() []Overlap { return Overlaps(h.Intervals()) }

// TokenInversions of the recorded history.
func (h *History) TokenInversions() []Inversion { return TokenInversions(h.Intervals()) }
