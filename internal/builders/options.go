package builders

import (
	"net/http"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/testing/conformance"
)

// optionSet is a functional-options adapter's constructors (ginlock's,
// httplock's), for the options a conformance.Route sets.
type optionSet[O, P any] struct {
	key                           func(...P) O
	keyFromRoute                  func() O
	parts                         map[string]func(string) P // by key spec source
	wait, ttl, maxHold            func(time.Duration) O
	noWait, failOpen              func() O
	tokenHeader                   func(string) O
	limit                         func(int) O
	byMethod, readSide, writeSide func() O
	releaseError                  func(func(error)) O
	acquireOptions                func(...core.AcquireOption) O
	nilResponders                 func() []O // every On* option given a custom answer, then nil
}

// customThenNil gives each On* option on the custom answer, then nil: the
// options of a conformance Route or Method with NilResponders.
func customThenNil[F, O any](custom F, ons ...func(F) O) []O {
	var none F
	opts := make([]O, 0, 2*len(ons))
	for _, on := range ons {
		opts = append(opts, on(custom), on(none))
	}
	return opts
}

// options are rt's options.
func (s optionSet[O, P]) options(t testing.TB, rt conformance.Route) []O {
	opts := []O{s.wait(rt.Wait), s.ttl(rt.TTL), s.maxHold(rt.MaxHold)}
	if rt.KeyFromRoute {
		opts = append(opts, s.keyFromRoute())
	} else {
		for _, spec := range rt.KeySpecs() {
			opts = append(opts, s.key(partsOf(t, rt, spec, s.parts)...))
		}
	}
	for _, o := range []struct {
		given bool
		opt   func() O
	}{
		{rt.NoWait, s.noWait},
		{rt.FailOpen, s.failOpen},
		{rt.TokenHeader != "", func() O { return s.tokenHeader(rt.TokenHeader) }},
		{rt.Limit > 0, func() O { return s.limit(rt.Limit) }},
		{rt.RW == conformance.RWByMethod, s.byMethod},
		{rt.RW == conformance.RWRead, s.readSide},
		{rt.RW == conformance.RWWrite, s.writeSide},
		{rt.ReleaseError != nil, func() O { return s.releaseError(rt.ReleaseError) }},
		{len(rt.AcquireOptions) > 0, func() O { return s.acquireOptions(rt.AcquireOptions...) }},
	} {
		if o.given {
			opts = append(opts, o.opt())
		}
	}
	if rt.NilResponders {
		opts = append(opts, s.nilResponders()...)
	}
	return opts
}

// partsOf turns one of rt's key specs into an adapter's parts, with ctors
// the adapter's part constructor for each source.
func partsOf[P any](t testing.TB, rt conformance.Route, spec string, ctors map[string]func(string) P) []P {
	specs, err := guard.ParseSpec(spec)
	if err != nil {
		t.Fatalf("route %s: %v", rt.Path, err)
	}
	parts := make([]P, len(specs))
	for i, s := range specs {
		parts[i] = ctors[s.Source](s.Name)
	}
	return parts
}

// rwNames are the echo configs' ReadWrite values.
var rwNames = map[conformance.RW]string{conformance.RWByMethod: "method", conformance.RWRead: "read", conformance.RWWrite: "write"}

// keyFields are an echo Config's key fields for rt: KeyParts, or Keys when
// it names several, or KeyFromRoute.
func keyFields(rt conformance.Route) (keyParts string, keys []string, fromRoute bool) {
	switch {
	case rt.KeyFromRoute:
		return "", nil, true
	case len(rt.MoreKeys) > 0:
		return "", rt.KeySpecs(), false
	}
	return rt.Key, nil, false
}

// recoverer answers 500 to a panicking handler (as gin.Recovery and echo's
// Recover do), after the lock's deferred release ran.
func recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	})
}
