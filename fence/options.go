package fence

import (
	"fmt"
	"time"

	"github.com/lockkit/lockkit/core"
)

// DefaultKeep is how long a record keeps its token after its value is gone
// (expired or deleted) unless WithKeep says otherwise. A late writer is
// refused only while the token is kept, so keep must outlast the longest
// a holder can be stalled between losing its lease and its write landing
// (a GC or VM pause, a partition). A day is far beyond any of those; a
// tombstone is a few dozen bytes.
const DefaultKeep = 24 * time.Hour

// Option configures a Redis store.
type Option func(*config)

type config struct {
	keep time.Duration
}

// WithKeep sets how long a record keeps its token after its value expired
// (TTL) or was deleted; at least a millisecond. A key written with a TTL
// occupies Redis memory for TTL + keep.
func WithKeep(d time.Duration) Option { return func(c *config) { c.keep = d } }

func (c *config) validate() error {
	if c.keep < time.Millisecond {
		return fmt.Errorf("%w: fence keep %v is below 1ms", core.ErrInvalidOption, c.keep)
	}
	return nil
}

// SetOption configures one Set.
type SetOption func(*setConfig)

type setConfig struct {
	ttl time.Duration
}

// TTL makes the value expire after d (at least a millisecond; rounded down
// to milliseconds). The token outlives it by the store's keep (WithKeep).
// Without TTL the value does not expire, and a Set without TTL removes an
// expiry an earlier Set gave the key.
func TTL(d time.Duration) SetOption { return func(c *setConfig) { c.ttl = d } }
