package faults

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrStaleToken is returned by Resource.Write for a fencing token lower than
// the highest the resource has accepted for that key.
var ErrStaleToken = errors.New("faults: stale fencing token")

// Resource is the protected resource of a lock test: a counter per key
// that checks fencing tokens the way a storage system should (reject a write
// whose token is lower than the highest seen), and counts lost updates: a
// read-modify-write accepted although another write landed between its read
// and its write. It is safe for concurrent use.
type Resource struct {
	mu    sync.Mutex
	cells map[string]*cell
	stats ResourceStats
}

type cell struct {
	value   int64
	version uint64 // bumped by every accepted write
	highest int64  // highest token accepted
}

// ResourceStats counts what a Resource saw.
type ResourceStats struct {
	Accepted    int64 // writes accepted
	Rejected    int64 // writes rejected for a stale token
	LostUpdates int64 // accepted writes that overwrote a write they had not read
}

// Snapshot is what a read saw.
type Snapshot struct {
	Value   int64
	Version uint64
}

// NewResource returns an empty Resource.
func NewResource() *Resource { return &Resource{cells: map[string]*cell{}} }

func (r *Resource) cell(key string) *cell {
	c := r.cells[key]
	if c == nil {
		c = &cell{}
		r.cells[key] = c
	}
	return c
}

// Read returns key's value and version.
func (r *Resource) Read(key string) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cell(key)
	return Snapshot{c.value, c.version}
}

// Write stores value for key if token is not lower than the highest token
// accepted so far (equal is the same holder writing again); read is what the
// writer read before computing value, so a write that overwrites one it
// never saw counts as a lost update.
func (r *Resource) Write(key string, token int64, read Snapshot, value int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cell(key)
	if token < c.highest {
		r.stats.Rejected++
		return fmt.Errorf("%w: %d < %d on %q", ErrStaleToken, token, c.highest, key)
	}
	if read.Version != c.version {
		r.stats.LostUpdates++
	}
	c.highest = token
	c.value = value
	c.version++
	r.stats.Accepted++
	return nil
}

// Increment is one read-modify-write of key under token: read, wait mid
// (the critical section's work; 0: none), write value+1.
func (r *Resource) Increment(key string, token int64, mid time.Duration) error {
	s := r.Read(key)
	if mid > 0 {
		time.Sleep(mid)
	}
	return r.Write(key, token, s, s.Value+1)
}

// Value returns key's current value.
func (r *Resource) Value(key string) int64 { return r.Read(key).Value }

// Stats returns the counters.
func (r *Resource) Stats() ResourceStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}
