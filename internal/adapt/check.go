package adapt

import (
	"errors"
	"fmt"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/corehook"
)

func isLost(err error) bool { return errors.Is(err, core.ErrLost) }

// Check is the one validation of the options every adapter shares, so the
// same option value is accepted or refused, with the same message, in
// ginlock, echolock, echo5lock, httplock and grpclock. Each adapter calls it
// at construction and panics (or, for echo's ToMiddleware, returns the
// error) with its own prefix. The error matches core.ErrInvalidOption.
//
// The rules: a nil Client is refused; a zero Wait is the default budget and
// a negative one is refused; NoWait together with a Wait is refused (choose
// one); a TTL below core.MinTTL is refused (0 is the Client's); a negative
// ReleaseTimeout is refused (0 is the Client's); Limit is 0 (a mutex) or 1
// to core.MaxPermits; Limit, a read/write side and several keys exclude one
// another; and AcquireOptions may not
// set the wait budget, NoWait, the TTL or the name, which the adapter owns
// (a silent override would make its own option lie).
func (c Config) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", core.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Client == nil:
		return bad("no *core.Client")
	case c.Wait < 0:
		return bad("Wait must be ≥ 0 (0: the default %v), got %v", DefaultWait, c.Wait)
	case c.NoWait && c.Wait > 0:
		return bad("both NoWait and Wait(%v) given; choose one", c.Wait)
	case c.TTL < 0, c.TTL > 0 && c.TTL < core.MinTTL:
		return bad("TTL must be 0 (the Client's) or ≥ %v, got %v", core.MinTTL, c.TTL)
	case c.ReleaseTimeout < 0:
		return bad("ReleaseTimeout must be ≥ 0 (0: the Client's), got %v", c.ReleaseTimeout)
	case c.Limit < 0, c.Limit > core.MaxPermits:
		return bad("Limit must be 1 to %d (0: a mutex), got %d", core.MaxPermits, c.Limit)
	case c.Limit > 0 && c.RW != RWNone:
		return bad("Limit and a read/write side are alternatives; choose one")
	case c.Keys > 1 && (c.Limit > 0 || c.RW != RWNone):
		return bad("several keys are taken together as mutexes; Limit and the read/write sides take one key")
	case c.Keys > core.MaxKeysPerAcquire:
		return bad("at most %d keys per request, got %d", core.MaxKeysPerAcquire, c.Keys)
	}
	if wait, noWait, ttl, name := corehook.AcquireSettings(c.Options); wait || noWait || ttl || name {
		return bad("AcquireOptions may not carry core.Wait, core.NoWait, core.TTL or core.Name; use the adapter's own Wait, NoWait and TTL options (the name is the route or method)")
	}
	return nil
}
