package otellock

import "github.com/lockkit/lockkit/core"

// MaxCachedSets is the bound of the metric attribute set cache, for tests.
const MaxCachedSets = maxCachedSets

// CachedSets is how many metric attribute sets o, an Observer from New,
// holds in its cache.
func CachedSets(o core.Observer) int {
	c := &o.(*observer).m.attrs
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
