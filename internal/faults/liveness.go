package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Liveness records when each waiter of a scenario acquired, to check that
// every one did within a bound after the faults healed. It is safe for
// concurrent use.
type Liveness struct {
	mu     sync.Mutex
	want   []string
	healed time.Time
	got    map[string]time.Time
	errs   map[string]error
}

// NewLiveness expects the named waiters to acquire.
func NewLiveness(waiters ...string) *Liveness {
	return &Liveness{want: waiters, got: map[string]time.Time{}, errs: map[string]error{}}
}

// Healed marks the moment the last fault was undone (now).
func (l *Liveness) Healed() {
	l.mu.Lock()
	l.healed = time.Now()
	l.mu.Unlock()
}

// Acquired records that who holds the lock now.
func (l *Liveness) Acquired(who string) {
	l.mu.Lock()
	if _, ok := l.got[who]; !ok {
		l.got[who] = time.Now()
	}
	l.mu.Unlock()
}

// Failed records that who gave up with err.
func (l *Liveness) Failed(who string, err error) {
	l.mu.Lock()
	l.errs[who] = err
	l.mu.Unlock()
}

// Check reports every expected waiter that failed, has not acquired, or
// acquired later than bound after Healed (an acquisition before the heal is
// fine). It fails when Healed was never called.
func (l *Liveness) Check(bound time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.healed.IsZero() {
		return errors.New("faults: Liveness.Check before Healed")
	}
	var errs []error
	for _, w := range l.want {
		at, ok := l.got[w]
		switch {
		case l.errs[w] != nil:
			errs = append(errs, fmt.Errorf("waiter %s failed: %w", w, l.errs[w]))
		case !ok:
			errs = append(errs, fmt.Errorf("waiter %s never acquired", w))
		case at.Sub(l.healed) > bound:
			errs = append(errs, fmt.Errorf("waiter %s acquired %v after the heal (bound %v)", w, at.Sub(l.healed).Round(time.Millisecond), bound))
		}
	}
	return errors.Join(errs...)
}

// Latest is how long after Healed the last waiter acquired (≤ 0 when all
// acquired before the heal).
func (l *Liveness) Latest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, at := range l.got {
		if at.After(last) {
			last = at
		}
	}
	return last.Sub(l.healed)
}

// Leftover is a Redis key a finished run should not have.
type Leftover struct {
	Key    string
	Reason string // "owned" (a hash with an o field), "held" (a live holder entry of a shared hash), "no ttl"
}

func (o Leftover) String() string { return o.Key + ": " + o.Reason }

// LeftLocks scans the keys under prefix (e.g. "lockkit:") on rdb — every
// master of a cluster client — and reports lock hashes still owned (an `o`
// field: a lock nobody released) and keys without a TTL (the layout keeps
// nothing per lock name forever; a released hash keeps only f and r, for a
// few seconds).
func LeftLocks(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]Leftover, error) {
	var (
		mu  sync.Mutex
		out []Leftover
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for range 100000 { // bounded: a test database is small
			keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				lo, err := checkKey(ctx, c, k)
				if err != nil {
					return err
				}
				if lo != nil {
					mu.Lock()
					out = append(out, *lo)
					mu.Unlock()
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
		return errors.New("faults: SCAN did not finish")
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

func checkKey(ctx context.Context, c redis.Cmdable, k string) (*Leftover, error) {
	typ, err := c.Type(ctx, k).Result()
	if err != nil {
		return nil, err
	}
	if typ == "none" { // expired since the scan
		return nil, nil
	}
	if typ == "hash" {
		o, err := c.HGet(ctx, k, "o").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		if o != "" { // absent or empty: free (release.lua)
			return &Leftover{k, "owned"}, nil
		}
		if held, err := sharedHeld(ctx, c, k); err != nil || held {
			return &Leftover{k, "held"}, err
		}
	}
	ttl, err := c.PTTL(ctx, k).Result()
	if err != nil {
		return nil, err
	}
	if ttl == -1 { // -2: gone meanwhile
		return &Leftover{k, "no ttl"}, nil
	}
	return nil, nil
}

// sharedHeld reports whether k is a shared hash (semaphore, read/write
// lock) with a holder entry p<token> = "<expiry ms>:..." not yet expired by
// the server's clock: a permit or a side nobody released.
func sharedHeld(ctx context.Context, c redis.Cmdable, k string) (bool, error) {
	fields, err := c.HGetAll(ctx, k).Result()
	if err != nil {
		return false, err
	}
	now, err := c.Time(ctx).Result()
	if err != nil {
		return false, err
	}
	for f, v := range fields {
		if !strings.HasPrefix(f, "p") {
			continue
		}
		exp, _, _ := strings.Cut(v, ":")
		if ms, err := strconv.ParseInt(exp, 10, 64); err == nil && ms >= now.UnixMilli() {
			return true, nil
		}
	}
	return false, nil
}

// FormatLeftovers joins leftovers for an error message.
func FormatLeftovers(lo []Leftover) string {
	s := make([]string, len(lo))
	for i, x := range lo {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}
