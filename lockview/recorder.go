package lockview

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lockkit/core"
)

// recorder is the View's core.Observer. It runs on the acquire path, so it
// does no I/O and holds its mutex for a map lookup and a few stores; once a
// key is tracked its events allocate nothing. Everything it keeps is
// bounded: the hot-key table by maxKeys × samples, the rings of recent
// losses and errors by their size.
type recorder struct {
	cfg *config

	mu  sync.Mutex // hot
	hot hotTable

	rmu    sync.Mutex // recent events (rare: losses, failures)
	losses ring[lossEvent]
	errs   ring[errEvent]
}

func newRecorder(cfg *config) *recorder {
	return &recorder{
		cfg: cfg, hot: newHotTable(cfg),
		losses: newRing[lossEvent](cfg.recent), errs: newRing[errEvent](cfg.recent),
	}
}

// ring keeps the last len(buf) events and counts them all.
type ring[T any] struct {
	buf   []T
	next  int
	n     int
	total uint64
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) add(v T) {
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.total++
}

// newest returns the events, newest first.
func (r *ring[T]) newest() []T {
	out := make([]T, 0, r.n)
	for i := 1; i <= r.n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// lossEvent and errEvent keep the key as the view shows it (per key mode)
// and the error's text with the key replaced the same way, made when the
// event happens: only then is the whole key at hand, and the rings then
// keep neither long keys nor the errors' own references alive.
type lossEvent struct {
	at        time.Time
	key, name string
	token     int64
	held      time.Duration
	cause     string
}

type errEvent struct {
	at        time.Time
	op        string
	key, name string
	err       string
}

func (r *recorder) AcquireStart(ctx context.Context, _ core.AcquireInfo) context.Context {
	return ctx
}

func (r *recorder) HolderMetadata(context.Context, core.AcquireInfo) string { return "" }

func (r *recorder) Contended(_ context.Context, a core.AcquireInfo, h core.Holder, attempt int) {
	now := time.Now().UnixNano()
	seen := now
	if !h.Seen.IsZero() {
		seen = h.Seen.UnixNano() // a waiter queued behind its head reports holders when its wait ends
	}
	r.mu.Lock()
	e := r.hot.entry(a.Key, now)
	if seen >= e.holderAt { // never let an older sighting replace a newer one
		e.holderOwner, e.holderToken, e.holderAt = h.Owner, h.Token, seen
	}
	if attempt > 0 { // a Redis attempt that found the key held, not a queued waiter's report
		e.refused++
	}
	e.metAt = now
	r.mu.Unlock()
}

func (r *recorder) AcquireEnd(ctx context.Context, a core.AcquireInfo, res core.AcquireResult) context.Context {
	switch res.Outcome {
	case core.OutcomeBadKey, core.OutcomeMisconfigured:
		return ctx // no wait to speak of; a bad key must not take a table entry
	case core.OutcomeUnavailable:
		r.failed("acquire", a.Key, a.Name, res.Err)
	}
	at := a.Start.UnixNano() + int64(res.Waited)
	r.mu.Lock()
	e := r.hot.entry(a.Key, at)
	e.add(at, res.Waited, res.Outcome, r.hot.window)
	e.addName(a.Name)
	r.mu.Unlock()
	return ctx
}

func (r *recorder) Renewed(_ context.Context, l core.LeaseInfo, err error) {
	// A loss is reported by Lost; a round cut short by Client.Close is no
	// Redis error.
	if err != nil && !errors.Is(err, core.ErrLost) && !errors.Is(err, context.Canceled) {
		r.failed("renew", l.Key, l.Name, err)
	}
}

func (r *recorder) Lost(_ context.Context, l core.LeaseInfo, cause error) {
	ev := lossEvent{
		at: time.Now(), key: r.cfg.show(l.Key), name: strings.Clone(l.Name), token: l.Token, held: l.Held,
		cause: r.cfg.scrub(errText(cause), l.Key),
	}
	r.rmu.Lock()
	r.losses.add(ev)
	r.rmu.Unlock()
}

func (r *recorder) Released(_ context.Context, l core.LeaseInfo, err error) {
	if errors.Is(err, core.ErrUnavailable) { // not ErrNotHeld: that is no Redis error
		r.failed("release", l.Key, l.Name, err)
	}
}

func (r *recorder) Unlocked(_ context.Context, a core.AcquireInfo, err error) {
	r.failed("unlocked", a.Key, a.Name, err)
}

func (r *recorder) failed(op, key, name string, err error) {
	if err == nil {
		return
	}
	ev := errEvent{at: time.Now(), op: op, key: r.cfg.show(key), name: strings.Clone(name), err: r.cfg.scrub(err.Error(), key)}
	r.rmu.Lock()
	r.errs.add(ev)
	r.rmu.Unlock()
}

func (r *recorder) recent() (losses []lossEvent, lossTotal uint64, errs []errEvent, errTotal uint64) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return r.losses.newest(), r.losses.total, r.errs.newest(), r.errs.total
}

// totals is how many losses and Redis errors there were since the View
// began (the index's summary), without copying the rings as recent does.
func (r *recorder) totals() (losses, errs uint64) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return r.losses.total, r.errs.total
}

// hotKeys is the hot-key table's rows at now: every key with acquires in
// the window (all), or the contended ones and how many others there are.
func (r *recorder) hotKeys(now time.Time, all bool) (rows []HotKey, hidden int) {
	r.mu.Lock()
	raw := r.hot.collect(now.UnixNano(), r.cfg.window)
	r.mu.Unlock()
	return rank(raw, r.cfg.topKeys, all)
}

// contendedKeys is how many contended keys the View's page lists at now
// (the index's summary; not bounded by the top rows): keys that met a
// holder within the window and have an acquire ending in it. A key whose
// only contention is an acquire still waiting has no row, so it is not
// counted either.
func (r *recorder) contendedKeys(now time.Time) int {
	from := windowStart(now.UnixNano(), r.cfg.window)
	n := 0
	r.mu.Lock()
	for i := range r.hot.keys[:r.hot.used] {
		if e := &r.hot.keys[i]; e.contended(from) && e.sampled(from) {
			n++
		}
	}
	r.mu.Unlock()
	return n
}

// tracked is how many keys the hot-key table holds (tests).
func (r *recorder) tracked() (keys, index int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hot.used, len(r.hot.idx)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
