package faults

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Contention witnesses "not acquired" answers: a lock may be reported held
// (lockkit's ErrNotAcquired) only when a holder existed during the refused
// wait. A Redis that does not answer is no holder; calling it contention
// turns an outage into a 409 and keeps a fail-open caller from running.
//
// A holder is recorded over a window that covers the time Redis can have
// held its lock: from when its acquire call began until its release call
// returned (a hold never ended counts until the end of the run). A lock
// Redis granted to a caller that had already given up (an acquire applied
// after its reply was too late) is no recorded holder, so a scenario must
// not expect refusals founded on one. It is safe for concurrent use.
type Contention struct {
	mu       sync.Mutex
	holds    []holdSpan
	refusals []Refusal
}

type holdSpan struct {
	key, who string
	from, to time.Time // to zero: not ended
}

// Refusal is one acquire that ended "not acquired": Who waited for Key
// during [From, To) and got Err.
type Refusal struct {
	Key, Who string
	From, To time.Time
	Err      string
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s refused on %q [%s, %s): %s", r.Who, r.Key,
		r.From.Format("15:04:05.000000"), r.To.Format("15:04:05.000000"), r.Err)
}

// NewContention returns an empty Contention.
func NewContention() *Contention { return &Contention{} }

// Held records that who held key, its acquire call having begun at from.
// Call the returned function once its release call has returned.
func (c *Contention) Held(key, who string, from time.Time) (released func()) {
	c.mu.Lock()
	i := len(c.holds)
	c.holds = append(c.holds, holdSpan{key: key, who: who, from: from})
	c.mu.Unlock()
	return func() {
		now := time.Now()
		c.mu.Lock()
		if c.holds[i].to.IsZero() {
			c.holds[i].to = now
		}
		c.mu.Unlock()
	}
}

// Refused records that who's acquire of key, begun at from, ended now
// with err, an error meaning the lock was seen held.
func (c *Contention) Refused(key, who string, from time.Time, err error) {
	now := time.Now()
	c.mu.Lock()
	c.refusals = append(c.refusals, Refusal{Key: key, Who: who, From: from, To: now, Err: fmt.Sprint(err)})
	c.mu.Unlock()
}

// Refusals returns every recorded refusal, ordered by key then start.
func (c *Contention) Refusals() []Refusal {
	c.mu.Lock()
	out := append([]Refusal(nil), c.refusals...)
	c.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].From.Before(out[j].From)
	})
	return out
}

// Unfounded returns the refusals during which no holder of their key
// existed: no hold of the key began before the refusal ended and ended
// after it began.
func (c *Contention) Unfounded() []Refusal {
	refusals := c.Refusals()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Refusal
	for _, r := range refusals {
		founded := false
		for _, h := range c.holds {
			if h.key == r.Key && h.from.Before(r.To) && (h.to.IsZero() || h.to.After(r.From)) {
				founded = true
				break
			}
		}
		if !founded {
			out = append(out, r)
		}
	}
	return out
}
