package keyspec

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lockkit/core"

	"github.com/lockkit/lockkit/internal/adapt"
)

// ErrConfig is the error of an adapter configuration that cannot work.
// gin's and echo's New panic with it (the frameworks' norm for middleware
// constructors); echo v5's ToMiddleware returns it.
var ErrConfig = errors.New("lockkit: invalid lock middleware configuration")

// Check rejects what would otherwise fail on every request: no Client, a
// negative wait budget or timeout, a TTL the engine refuses.
func Check(c adapt.Config) error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: no *core.Client", ErrConfig)
	case c.Wait < 0:
		return fmt.Errorf("%w: Wait must be ≥ 0, got %v", ErrConfig, c.Wait)
	case c.NoWait && c.Wait > 0:
		return fmt.Errorf("%w: both NoWait and Wait(%v) given; choose one", ErrConfig, c.Wait)
	case c.TTL < 0, c.TTL > 0 && c.TTL < 10*time.Millisecond:
		return fmt.Errorf("%w: TTL must be 0 (the Client's) or ≥ 10ms, got %v", ErrConfig, c.TTL)
	case c.ReleaseTimeout < 0:
		return fmt.Errorf("%w: ReleaseTimeout must be ≥ 0, got %v", ErrConfig, c.ReleaseTimeout)
	}
	return nil
}

// KeySource resolves echo's two key options into one function: keyParts (a
// spec such as "const:order,param:id", read with rd) or keyFunc (a whole
// key, used verbatim). Exactly one must be set.
func KeySource[R any](keyParts string, keyFunc func(R) (string, error), rd Reader[R]) (func(R) (string, error), error) {
	switch {
	case keyParts != "" && keyFunc != nil:
		return nil, fmt.Errorf("%w: both KeyParts and KeyFunc set; choose one", ErrConfig)
	case keyFunc != nil:
		return func(r R) (string, error) { return WholeKey(keyFunc(r)) }, nil
	case keyParts != "":
		specs, err := Parse(keyParts)
		if err != nil {
			return nil, fmt.Errorf("%w: KeyParts: %w", ErrConfig, err)
		}
		parts := rd.Parts(specs)
		return func(r R) (string, error) { return core.BuildKey(r, parts) }, nil
	}
	return nil, fmt.Errorf("%w: no key source; set KeyParts (e.g. \"const:order,param:id\") or KeyFunc", ErrConfig)
}
