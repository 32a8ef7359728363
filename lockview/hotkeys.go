package lockview

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockkit/lockkit/core"
)

// evictSample is how many table entries a new key looks at to find the one
// it replaces (the coldest of them), as Redis samples keys for its LRU: a
// few random looks instead of an ordered structure to maintain on every
// acquire. A hot key is replaced only if every entry looked at is hotter,
// which a flood of cold keys never achieves.
const evictSample = 8

// sample is one finished acquire of a tracked key: 16 bytes, so a full
// table of the defaults (256 keys × 128 samples) is 512 KiB.
type sample struct {
	at      int64  // end of the acquire, Unix ns
	waitUs  uint32 // its wait in µs (saturated at ~71 min)
	outcome core.Outcome
}

// maxNames bounds the telemetry names a key keeps: names are route
// templates and RPC methods, a few per key (pay, refund and ship of one
// order); a name built from requests cannot grow an entry.
const maxNames = 4

// hotKey is one tracked key: a ring of its recent acquires and a score
// (wait seconds decaying with the window) that eviction compares.
type hotKey struct {
	key       string // "" when the slot is free
	truncated bool   // key is the first maxKeyLen bytes of longer keys
	// names are the telemetry names its acquires gave since it was
	// tracked, the first maxNames of them; moreNames: others came after.
	// A key shows them all, not whichever route touched it last.
	names     [maxNames]string
	nNames    int
	moreNames bool
	ring      []sample
	next, n   int
	score     float64
	scoreAt   int64
	// metAt is when an acquire of this process last met the key held (a
	// Contended event; see contended).
	metAt int64
	// The most recently seen holder (by the time it was met, which for a
	// waiter queued behind its Client's head is earlier than its report),
	// and how many Redis attempts of this process were refused since the
	// key was tracked.
	holderOwner string
	holderToken int64
	holderAt    int64
	refused     uint64
}

// hotTable tracks at most maxKeys keys in a fixed array of entries whose
// rings are made on first use and reused on eviction: its memory is
// bounded by maxKeys × samples whatever the callers' keys. Guarded by the
// recorder's mutex.
type hotTable struct {
	window  float64 // seconds
	samples int
	maxKey  int
	idx     map[string]int
	keys    []hotKey
	used    int
	rng     uint64
	evicted int // since the index was last rebuilt
}

func newHotTable(cfg *config) hotTable {
	return hotTable{
		window: cfg.window.Seconds(), samples: cfg.samples, maxKey: cfg.maxKeyLen,
		idx: make(map[string]int, cfg.maxKeys), keys: make([]hotKey, cfg.maxKeys), rng: 0x9e3779b97f4a7c15,
	}
}

// entry returns key's entry, taking one (a free slot, or the coldest
// sampled one) when key is not tracked; it allocates only then.
func (t *hotTable) entry(key string, now int64) *hotKey {
	truncated := len(key) > t.maxKey
	if truncated {
		key = key[:t.maxKey]
	}
	if i, ok := t.idx[key]; ok {
		return &t.keys[i]
	}
	var i int
	if t.used < len(t.keys) {
		i = t.used
		t.used++
	} else {
		i = t.coldest(now)
		delete(t.idx, t.keys[i].key)
		t.evicted++
	}
	e := &t.keys[i]
	ring := e.ring
	if ring == nil {
		ring = make([]sample, t.samples)
	}
	// Clone: the table must not keep a caller's larger buffer (a request
	// body the key was cut from) alive.
	*e = hotKey{key: strings.Clone(key), truncated: truncated, ring: ring, scoreAt: now}
	t.idx[e.key] = i
	if t.evicted >= 8*len(t.keys) {
		t.reindex()
	}
	return e
}

// reindex rebuilds the key index from the entries, so a long churn of
// deletes and inserts cannot leave the map larger than the table.
func (t *hotTable) reindex() {
	t.idx = make(map[string]int, len(t.keys))
	for i := range t.keys[:t.used] {
		t.idx[t.keys[i].key] = i
	}
	t.evicted = 0
}

// coldest picks, among evictSample random entries, the one with the lowest
// score now.
func (t *hotTable) coldest(now int64) int {
	best, bestScore := 0, math.Inf(1)
	for range evictSample {
		// xorshift64: cheap, deterministic enough for sampling.
		t.rng ^= t.rng << 13
		t.rng ^= t.rng >> 7
		t.rng ^= t.rng << 17
		i := int(t.rng % uint64(len(t.keys)))
		if s := t.keys[i].scoreNow(now, t.window); s < bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

func (e *hotKey) scoreNow(now int64, window float64) float64 {
	dt := float64(now-e.scoreAt) / 1e9
	if dt <= 0 {
		return e.score
	}
	return e.score * math.Exp(-dt/window)
}

// addName adds name to the key's names (a few compares once it is known;
// a copy only when it is new, so a name cut from a larger buffer does not
// keep that alive).
func (e *hotKey) addName(name string) {
	if name == "" {
		return
	}
	for _, n := range e.names[:e.nNames] {
		if n == name {
			return
		}
	}
	if e.nNames == maxNames {
		e.moreNames = true
		return
	}
	e.names[e.nNames] = strings.Clone(name)
	e.nNames++
}

// windowStart is when the window of length window ending at now begins
// (Unix ns).
func windowStart(now int64, window time.Duration) int64 { return now - window.Nanoseconds() }

// contended: an acquire of this process met the key held within the window
// beginning at from.
func (e *hotKey) contended(from int64) bool { return e.metAt >= from }

// sampled: one of the acquires the key keeps ended within the window
// beginning at from, so the key has a row.
func (e *hotKey) sampled(from int64) bool {
	for _, s := range e.ring[:e.n] {
		if s.at >= from {
			return true
		}
	}
	return false
}

// add records one finished acquire.
func (e *hotKey) add(at int64, wait time.Duration, o core.Outcome, window float64) {
	us := wait.Microseconds()
	if us > math.MaxUint32 {
		us = math.MaxUint32
	}
	if us < 0 {
		us = 0
	}
	e.ring[e.next] = sample{at: at, waitUs: uint32(us), outcome: o}
	e.next = (e.next + 1) % len(e.ring)
	if e.n < len(e.ring) {
		e.n++
	}
	e.score = e.scoreNow(at, window) + wait.Seconds()
	if at > e.scoreAt {
		e.scoreAt = at
	}
}

// HotKey is one row of the hot-key table: a key's acquires that ended
// within the window, or, when there were more of them than the key keeps
// (WithSamples), its latest ones (Capped), with their waits. Durations are
// milliseconds.
type HotKey struct {
	Key       string `json:"key,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Names are the telemetry names (core.Name: route templates, RPC
	// methods) the key's acquires gave since it was tracked, sorted, at
	// most four; MoreNames: others too. One key, one set of names, not
	// whichever route touched it last.
	Names     []string `json:"names,omitempty"`
	MoreNames bool     `json:"more_names,omitempty"`
	// Contended: an acquire of this process met the key held by another
	// lease within the window (its own attempt, or through the local
	// queue). The page lists contended keys first, and only them unless
	// asked for all.
	Contended bool `json:"contended"`
	// Covers is the time the counts and percentiles cover, ending at the
	// snapshot: the window, or, when Capped, the span of the key's last
	// SamplesPerKey acquires (a hot key's can be a second or two).
	Covers    float64 `json:"covers_ms"`
	Capped    bool    `json:"capped"`
	Acquires  int     `json:"acquires"`
	Acquired  int     `json:"acquired"`
	Refused   int     `json:"not_acquired"` // contended or timed out
	Failed    int     `json:"failed"`       // every other outcome: unavailable, canceled, deadline, closed
	WaitTotal float64 `json:"wait_total_ms"`
	WaitP50   float64 `json:"wait_p50_ms"`
	WaitP99   float64 `json:"wait_p99_ms"`
	WaitMax   float64 `json:"wait_max_ms"`
	// LastHolder is the holder most recently met on the key (by a refused
	// attempt, or by a waiter queued behind its Client's head).
	LastHolder *SeenHolder `json:"last_holder,omitempty"`
	// RefusedAttempts counts the Redis attempts that found the key held since it
	// was tracked (not only within the window).
	RefusedAttempts uint64 `json:"refused_attempts"`
}

// SeenHolder is a holder an attempt met.
type SeenHolder struct {
	Owner string    `json:"owner"`
	Token int64     `json:"token"`
	Seen  time.Time `json:"seen"`
}

// hotRaw is a tracked key's samples within the window, copied out under
// the lock so the sorting happens outside it.
type hotRaw struct {
	row   HotKey
	waits []uint32
}

// collect copies the entries' samples within the window ending at now.
func (t *hotTable) collect(now int64, window time.Duration) []hotRaw {
	from := windowStart(now, window)
	var out []hotRaw
	for i := range t.keys[:t.used] {
		e := &t.keys[i]
		r := hotRaw{row: HotKey{Key: e.key, Truncated: e.truncated, RefusedAttempts: e.refused, Contended: e.contended(from), MoreNames: e.moreNames}}
		if e.nNames > 0 {
			r.row.Names = slices.Sorted(slices.Values(e.names[:e.nNames]))
		}
		if e.holderAt != 0 {
			r.row.LastHolder = &SeenHolder{Owner: e.holderOwner, Token: e.holderToken, Seen: time.Unix(0, e.holderAt)}
		}
		oldest := now
		for j := range e.n {
			s := e.ring[j]
			if s.at < from {
				continue
			}
			oldest = min(oldest, s.at)
			r.waits = append(r.waits, s.waitUs)
			switch {
			case s.outcome == core.OutcomeAcquired:
				r.row.Acquired++
			case s.outcome.NotAcquired():
				r.row.Refused++
			default:
				r.row.Failed++
			}
		}
		// Every sample of a full ring within the window: older acquires
		// of the window were overwritten, the row covers only these.
		r.row.Capped = len(r.waits) == len(e.ring)
		r.row.Covers = ms(window)
		if r.row.Capped {
			r.row.Covers = ms(time.Duration(now - oldest))
		}
		if len(r.waits) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// rank turns the copied samples into rows, contended keys first, each
// group hottest (most wait within the window) first, at most top of them;
// without all, only the contended keys, and hidden counts the others.
func rank(raw []hotRaw, top int, all bool) (rows []HotKey, hidden int) {
	rows = make([]HotKey, 0, len(raw))
	for _, r := range raw {
		if !all && !r.row.Contended {
			hidden++
			continue
		}
		slices.Sort(r.waits)
		var total float64
		for _, w := range r.waits {
			total += float64(w)
		}
		row := r.row
		row.Acquires = len(r.waits)
		row.WaitTotal = total / 1e3
		row.WaitP50 = float64(percentile(r.waits, 0.50)) / 1e3
		row.WaitP99 = float64(percentile(r.waits, 0.99)) / 1e3
		row.WaitMax = float64(r.waits[len(r.waits)-1]) / 1e3
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b HotKey) int {
		switch {
		case a.Contended != b.Contended:
			if a.Contended {
				return -1
			}
			return 1
		case a.WaitTotal > b.WaitTotal:
			return -1
		case a.WaitTotal < b.WaitTotal:
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(rows) > top {
		rows = rows[:top]
	}
	return rows, hidden
}

// percentile is the nearest-rank percentile of sorted (non-empty).
func percentile(sorted []uint32, p float64) uint32 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
