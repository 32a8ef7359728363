package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lockkit/core"
)

// lockStats is the report's core.Observer, one per replica's lock Client:
// how long each acquire waited (AcquireEnd's Waited), how long each lease
// was held (Released's Held), how each acquire ended, and per key how many
// acquires found the lock held by someone else. It is what otellock's
// histograms and counters would show on a dashboard, kept in memory.
type lockStats struct {
	core.NopObserver

	mu       sync.Mutex
	waits    []time.Duration // of acquires that got the lock
	holds    []time.Duration
	outcomes map[core.Outcome]int
	unlocked int
	keys     map[string]*keyStats
	names    map[nameKind]*nameStats
	// claims are the idempotency claims (core.KindClaim) by outcome: a
	// record, not a lock, so none of the lock numbers above counts them.
	claims map[core.Outcome]int
}

// nameKind is one series of the dashboard: a lock name (route template,
// RPC method) and the kind of lease (mutex, semaphore, read, write).
type nameKind struct{ name, kind string }

// nameStats is one name and kind's share: what otellock's histograms
// record for that series.
type nameStats struct {
	acquires     int
	waits, holds []time.Duration // waits of acquires that got the lock
}

// keyStats is one key's share of the acquires.
type keyStats struct {
	acquires  int
	contended int             // acquires that found the lock held (Contended, or not acquired)
	waits     []time.Duration // of acquires that got it
}

func newLockStats() *lockStats {
	return &lockStats{outcomes: map[core.Outcome]int{}, keys: map[string]*keyStats{}, names: map[nameKind]*nameStats{}, claims: map[core.Outcome]int{}}
}

// acquireMark travels in the context AcquireStart returns, so Contended can
// mark its acquire and AcquireEnd count it once, however many attempts it
// made.
type acquireMark struct{ contended atomic.Bool }

type markKey struct{ s *lockStats }

func (s *lockStats) AcquireStart(ctx context.Context, _ core.AcquireInfo) context.Context {
	return context.WithValue(ctx, markKey{s}, &acquireMark{})
}

func (s *lockStats) Contended(ctx context.Context, _ core.AcquireInfo, _ core.Holder, _ int) {
	if m, ok := ctx.Value(markKey{s}).(*acquireMark); ok {
		m.contended.Store(true)
	}
}

func (s *lockStats) AcquireEnd(ctx context.Context, a core.AcquireInfo, r core.AcquireResult) context.Context {
	m, _ := ctx.Value(markKey{s}).(*acquireMark)
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.Kind == core.KindClaim {
		s.claims[r.Outcome]++
		return ctx
	}
	s.outcomes[r.Outcome]++
	k := s.keys[a.Key]
	if k == nil {
		k = &keyStats{}
		s.keys[a.Key] = k
	}
	k.acquires++
	// A NoWait acquire refused because a lease of this same Client holds the
	// key gets no Contended event (no attempt was made): its outcome says it.
	if (m != nil && m.contended.Load()) || r.Outcome == core.OutcomeContended || r.Outcome == core.OutcomeTimeout {
		k.contended++
	}
	n := s.series(a.Name, a.Kind)
	n.acquires++
	if r.Outcome == core.OutcomeAcquired {
		s.waits = append(s.waits, r.Waited)
		k.waits = append(k.waits, r.Waited)
		n.waits = append(n.waits, r.Waited)
	}
	return ctx
}

func (s *lockStats) Released(_ context.Context, l core.LeaseInfo, _ error) {
	if l.Kind == core.KindClaim {
		return
	}
	s.mu.Lock()
	s.holds = append(s.holds, l.Held)
	n := s.series(l.Name, l.Kind)
	n.holds = append(n.holds, l.Held)
	s.mu.Unlock()
}

// series is name and kind's stats, made on first use; s.mu held.
func (s *lockStats) series(name, kind string) *nameStats {
	if kind == "" {
		kind = core.KindMutex
	}
	n := s.names[nameKind{name, kind}]
	if n == nil {
		n = &nameStats{}
		s.names[nameKind{name, kind}] = n
	}
	return n
}

func (s *lockStats) Unlocked(context.Context, core.AcquireInfo, error) {
	s.mu.Lock()
	s.unlocked++
	s.mu.Unlock()
}
