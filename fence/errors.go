package fence

import (
	"errors"
	"fmt"
)

// Every exported error of package fence is in this file. Besides its own
// sentinels, the package reuses core's where the meaning is the same, so a
// caller (or an adapter's error mapping) handles one vocabulary:
//
//   - core.ErrInvalidKey: empty key, or a key over core.MaxKeyLen bytes.
//   - core.ErrUnavailable: Redis could not be reached or answered with an
//     error (as a *core.UnavailableError naming the operation and key), unless
//     the caller's ctx ended first: then the error matches ctx.Err().
//   - core.ErrBadRedisClient, core.ErrInvalidOption: from NewRedis.

// Sentinel errors.
var (
	// ErrStale: the store holds a newer token than the write's (or the
	// claim's), so it was refused and nothing changed. The writer's lease is
	// over (another holder wrote or claimed since); it must not retry with
	// the same token. The concrete error is a *StaleError.
	ErrStale = errors.New("fence: stale token")

	// ErrInvalidToken: a token ≤ 0. Lease.Token is always > 0, so this is a
	// zero value passed by mistake (a missing lease), never a lock's token.
	ErrInvalidToken = errors.New("fence: invalid token")

	// ErrNotRecord: the key holds a Redis value of another type (WRONGTYPE):
	// it was written by something other than a fence store.
	ErrNotRecord = errors.New("fence: key holds a value of another type (not written by a fence store)")
)

// StaleError is the concrete error behind ErrStale.
type StaleError struct {
	Key   string
	Token int64 // the refused write's (or claim's) token
	// Current is the newer token the store holds; 0 when unknown (CheckRows:
	// zero rows affected says only that the row did not match).
	Current int64
}

func (e *StaleError) Error() string {
	if e.Current == 0 {
		return fmt.Sprintf("fence: write to %q with token %d refused: stale token, or no such row", e.Key, e.Token)
	}
	return fmt.Sprintf("fence: write to %q with token %d refused: stale token (the store holds %d)", e.Key, e.Token, e.Current)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

func checkToken(token int64) error {
	if token <= 0 {
		return fmt.Errorf("%w: %d (a fencing token is > 0: pass Lease.Token())", ErrInvalidToken, token)
	}
	return nil
}
