package keyspec

import (
	"fmt"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
	"github.com/lockkit/lockkit/internal/keypart"
)

// KeySource resolves echo's two key options into one function: keyParts (a
// spec such as "const:order,param:id", read with rd) or keyFunc (a whole
// key, used verbatim). Exactly one must be set.
func KeySource[R any](keyParts string, keyFunc func(R) (string, error), rd Reader[R]) (func(R) (string, error), error) {
	switch {
	case keyParts != "" && keyFunc != nil:
		return nil, fmt.Errorf("%w: both KeyParts and KeyFunc set; choose one", core.ErrInvalidOption)
	case keyFunc != nil:
		return func(r R) (string, error) { return WholeKey(keyFunc(r)) }, nil
	case keyParts != "":
		specs, err := Parse(keyParts)
		if err != nil {
			return nil, fmt.Errorf("%w: KeyParts: %w", core.ErrInvalidOption, err)
		}
		parts := rd.Parts(specs)
		return func(r R) (string, error) { return keypart.Build(r, parts) }, nil
	}
	return nil, fmt.Errorf("%w: no key source; set KeyParts (e.g. \"const:order,param:id\") or KeyFunc", core.ErrInvalidOption)
}

// KeySources resolves echo's key options into one key function per lock:
// keyParts or keyFunc (one key, as KeySource), or keys (several key specs,
// each like keyParts, locked together). keys excludes the other two.
func KeySources[R any](keyParts string, keys []string, keyFunc func(R) (string, error), rd Reader[R]) ([]adapt.KeyFunc[R], error) {
	if len(keys) == 0 {
		f, err := KeySource(keyParts, keyFunc, rd)
		if err != nil {
			return nil, err
		}
		return []adapt.KeyFunc[R]{f}, nil
	}
	if keyParts != "" || keyFunc != nil {
		return nil, fmt.Errorf("%w: Keys with KeyParts or KeyFunc; choose one", core.ErrInvalidOption)
	}
	out := make([]adapt.KeyFunc[R], len(keys))
	for i, spec := range keys {
		if spec == "" {
			return nil, fmt.Errorf("%w: Keys[%d] is empty", core.ErrInvalidOption, i)
		}
		f, err := KeySource(spec, nil, rd)
		if err != nil {
			return nil, fmt.Errorf("Keys[%d]: %w", i, err)
		}
		out[i] = f
	}
	return out, nil
}
