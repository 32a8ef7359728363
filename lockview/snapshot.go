package lockview

import (
	"time"

	"github.com/lockkit/lockkit/core"
)

// Snapshot is what the page shows, and the JSON document (?format=json).
// Durations are milliseconds (suffix _ms); keys are shown per the key mode
// (omitted when hidden).
type Snapshot struct {
	Time    time.Time `json:"time"`
	Owner   string    `json:"owner"`
	KeyMode string    `json:"key_mode"`
	// WindowSeconds is how far back the hot keys look (WithWindow).
	WindowSeconds float64 `json:"window_seconds"`
	// SamplesPerKey is how many acquires a hot key keeps (WithSamples): a
	// key with more within the window shows its latest SamplesPerKey
	// (HotKey.Capped), over the time HotKey.Covers says.
	SamplesPerKey int `json:"samples_per_key"`
	// Locks are the locks this process's Client holds or waits for now, at
	// most the max rows of them; LocksTotal counts them all.
	Locks      []Lock `json:"locks"`
	LocksTotal int    `json:"locks_total"`
	// HotKeys are the keys acquired within the window, contended ones
	// first, each group with the most wait first. AllHotKeys: every such
	// key is listed (the handler's ?keys=all, and View.Snapshot); else
	// only the contended ones, and HiddenHotKeys counts the others.
	HotKeys       []HotKey `json:"hot_keys"`
	AllHotKeys    bool     `json:"all_hot_keys"`
	HiddenHotKeys int      `json:"hidden_hot_keys"`
	// Losses and Errors are the latest events, newest first; the totals
	// count every one since the view began.
	Losses      []Loss  `json:"losses"`
	LossesTotal uint64  `json:"losses_total"`
	Errors      []Error `json:"errors"`
	ErrorsTotal uint64  `json:"errors_total"`
	// InspectEnabled: ?inspect=KEY looks up a key's holder (WithInspect).
	InspectEnabled bool `json:"inspect_enabled"`
	// Inspect is the lookup this request asked for, if any.
	Inspect *Inspected `json:"inspect,omitempty"`
}

// Lock is one lock of this process: held by it, or waited for by its
// callers.
type Lock struct {
	Key string `json:"key,omitempty"`
	// Name is the holding lease's telemetry name (when Held).
	Name string `json:"name,omitempty"`
	// Kind is core.LockState.Kind: mutex, semaphore, read or write.
	Kind string `json:"kind,omitempty"`
	// Held: this process holds it (as Owner, with fencing token Token).
	Held       bool       `json:"held"`
	Owner      string     `json:"owner,omitempty"`
	Token      int64      `json:"token,omitempty"`
	AcquiredAt *time.Time `json:"acquired_at,omitempty"`
	HeldFor    float64    `json:"held_for_ms,omitempty"`
	// TTLLeft is the time to the lease's local validity deadline (renewal
	// moves it forward); TTL the lease's TTL.
	TTLLeft float64 `json:"ttl_left_ms,omitempty"`
	TTL     float64 `json:"ttl_ms,omitempty"`
	// Waiters wait in this process's queue for the lock, the oldest since
	// OldestWaitSince (for OldestWait).
	Waiters         int        `json:"waiters"`
	OldestWaitSince *time.Time `json:"oldest_wait_since,omitempty"`
	OldestWait      float64    `json:"oldest_wait_ms,omitempty"`
	// Waiting are the routes that wait: the telemetry names the waiters
	// gave, each once (at most eight).
	Waiting []string `json:"waiting,omitempty"`
	// Holder is whom they wait for when another process holds the lock:
	// the holder last met (owner, fencing token, when), nil when none was
	// met yet.
	Holder *SeenHolder `json:"holder,omitempty"`
}

// Loss is a lease this process lost (or had ended by Client.Close).
type Loss struct {
	Time    time.Time `json:"time"`
	Key     string    `json:"key,omitempty"`
	Name    string    `json:"name,omitempty"`
	Token   int64     `json:"token"`
	HeldFor float64   `json:"held_for_ms"`
	Cause   string    `json:"cause"`
}

// Error is a failure of Redis seen by this process: an acquire that ended
// unavailable, a failed renewal round, a release Redis did not answer, a
// handler an adapter ran unlocked.
type Error struct {
	Time  time.Time `json:"time"`
	Op    string    `json:"op"`
	Key   string    `json:"key,omitempty"`
	Name  string    `json:"name,omitempty"`
	Error string    `json:"error"`
}

// Inspected is the answer to ?inspect=KEY.
type Inspected struct {
	Key      string  `json:"key,omitempty"`
	Held     bool    `json:"held"`
	Owner    string  `json:"owner,omitempty"`
	Metadata string  `json:"metadata,omitempty"`
	TTL      float64 `json:"ttl_ms,omitempty"`
	Token    int64   `json:"token,omitempty"`
	Error    string  `json:"error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// Snapshot reads c's locks and the Observer's records now, every hot key
// included (AllHotKeys). c is the Client whose Observer includes
// v.Observer().
func (v *View) Snapshot(c *core.Client) Snapshot { return v.snapshot(c, true) }

// snapshot is Snapshot with the hot keys all, or only the contended ones.
func (v *View) snapshot(c *core.Client, allHot bool) Snapshot {
	now := time.Now()
	s := Snapshot{
		Time: now, Owner: c.Owner(), KeyMode: v.cfg.keyMode.String(), WindowSeconds: v.cfg.window.Seconds(),
		SamplesPerKey: v.cfg.samples, InspectEnabled: v.cfg.inspect,
	}
	locks := c.Locks()
	s.LocksTotal = len(locks)
	if len(locks) > v.cfg.maxRows {
		locks = locks[:v.cfg.maxRows]
	}
	s.Locks = make([]Lock, 0, len(locks))
	for _, l := range locks {
		row := Lock{Key: v.cfg.show(l.Key), Name: l.Name, Kind: l.Kind, Held: l.Held, Waiters: l.Waiters, Waiting: l.WaitingNames}
		if h := l.Holder; !l.Held && !h.Seen.IsZero() {
			row.Holder = &SeenHolder{Owner: h.Owner, Token: h.Token, Seen: h.Seen}
		}
		if l.Held {
			at := l.AcquiredAt
			row.Owner, row.Token, row.AcquiredAt = s.Owner, l.Token, &at
			row.HeldFor = ms(now.Sub(l.AcquiredAt))
			row.TTLLeft = ms(max(0, l.Until.Sub(now)))
			row.TTL = ms(l.TTL)
		}
		if !l.OldestWait.IsZero() {
			since := l.OldestWait
			row.OldestWaitSince = &since
			row.OldestWait = ms(now.Sub(since))
		}
		s.Locks = append(s.Locks, row)
	}
	s.HotKeys, s.HiddenHotKeys = v.rec.hotKeys(now, allHot)
	s.AllHotKeys = allHot
	for i := range s.HotKeys {
		h := &s.HotKeys[i]
		h.Key = v.cfg.showTracked(h.Key, h.Truncated)
	}
	losses, lossTotal, errs, errTotal := v.rec.recent()
	s.LossesTotal, s.ErrorsTotal = lossTotal, errTotal
	s.Losses = make([]Loss, 0, len(losses))
	for _, e := range losses {
		s.Losses = append(s.Losses, Loss{Time: e.at, Key: e.key, Name: e.name, Token: e.token, HeldFor: ms(e.held), Cause: e.cause})
	}
	s.Errors = make([]Error, 0, len(errs))
	for _, e := range errs {
		s.Errors = append(s.Errors, Error{Time: e.at, Op: e.op, Key: e.key, Name: e.name, Error: e.err})
	}
	return s
}
