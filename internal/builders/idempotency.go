package builders

import (
	"fmt"
	"time"

	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/testing/conformance"
)

// idemSet is an adapter's idempotency option constructors (ginlock's
// IdempotencyHeader, ...), for a conformance.Idempotency.
type idemSet[O any] struct {
	header                         func(string) O
	required, storeEvery, failOpen func() O
	methods, replayHeaders         func(...string) O
	scope                          func(spec string) (O, error) // the spec as the adapter's scope
	maxBody, maxAnswer             func(int64) O
	retention, wait, ttl, maxHold  func(time.Duration) O
}

// options are x's options.
func (s idemSet[O]) options(x conformance.Idempotency) ([]O, error) {
	var opts []O
	for _, o := range []struct {
		given bool
		opt   func() O
	}{
		{x.Header != "", func() O { return s.header(x.Header) }},
		{x.Required, s.required},
		{x.Methods != nil, func() O { return s.methods(x.Methods...) }},
		{x.MaxBody != 0, func() O { return s.maxBody(x.MaxBody) }},
		{x.MaxAnswer != 0, func() O { return s.maxAnswer(x.MaxAnswer) }},
		{x.Retention != 0, func() O { return s.retention(x.Retention) }},
		{x.Wait != 0, func() O { return s.wait(x.Wait) }},
		{x.TTL != 0, func() O { return s.ttl(x.TTL) }},
		{x.MaxHold != 0, func() O { return s.maxHold(x.MaxHold) }},
		{x.StoreEveryAnswer, s.storeEvery},
		{x.FailOpen, s.failOpen},
		{len(x.ReplayHeaders) > 0, func() O { return s.replayHeaders(x.ReplayHeaders...) }},
	} {
		if o.given {
			opts = append(opts, o.opt())
		}
	}
	if x.Scope != "" {
		o, err := s.scope(x.Scope)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// scopeParts is the scope option of an adapter with parts: spec's parts,
// made by ctors (by source), given to scope.
func scopeParts[O, P any](ctors map[string]func(string) P, scope func(...P) O) func(string) (O, error) {
	return func(spec string) (O, error) {
		specs, err := guard.ParseSpec(spec)
		if err != nil {
			var none O
			// Parts are made from names, not read from a spec: only an
			// adapter whose scope is a spec (echo's) can refuse one.
			return none, fmt.Errorf("%w: scope: %w", conformance.ErrNotExpressible, err)
		}
		parts := make([]P, len(specs))
		for i, s := range specs {
			parts[i] = ctors[s.Source](s.Name)
		}
		return scope(parts...), nil
	}
}

// idempotent builds an adapter's idempotency middleware from x with build
// (the adapter's Idempotent on client, which panics on a bad option),
// returning its panic as the error.
func idempotent[O, M any](s idemSet[O], x conformance.Idempotency, build func(opts ...O) M) (M, error) {
	var mw M
	opts, err := s.options(x)
	if err != nil {
		return mw, err
	}
	err = conformance.Panic(func() { mw = build(opts...) })
	return mw, err
}
