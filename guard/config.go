package guard

import (
	"fmt"
	"sync"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Config is what an adapter needs to guard a handler, as values: every
// adapter fills it from its own options, under the same names, and New
// checks it once, when the adapter is built.
type Config[R any] struct {
	// Client is the lock engine.
	Client *core.Client
	// Keys are the lock keys of a request: one, or several taken together,
	// all or nothing, as mutexes (core.Client.AcquireAllRequest).
	Keys []Key[R]
	// Request is what every acquire asks for: the kind of lock (Limit,
	// Side), Wait (0: core.DefaultWait), NoWait, TTL (0: the Client's),
	// FailOpen, MaxWaiters... Its Name is set per request (the route
	// template, the RPC method).
	Request core.Request
	// SideByMethod takes the read side of a read/write lock for safe
	// methods (SafeMethod: GET, HEAD) and the write side for every other;
	// Request.Side must then be unset.
	SideByMethod bool
	// ReleaseTimeout bounds the release after the handler returned; 0: the
	// Client's (core.WithReleaseTimeout).
	ReleaseTimeout time.Duration
	// AcquireOptions are further core options (core.Reentrant,
	// core.MaxWaiters, core.NoRenew). They may not set what the adapter has
	// an option of its own for (the wait budget, NoWait, the TTL, MaxHold,
	// the name): a silent override would make the adapter's own option lie.
	AcquireOptions []core.AcquireOption
	// RetryAfter gives the retry hint of a refused request from its error
	// (nil: DefaultRetryAfter); a negative hint is 0.
	RetryAfter func(error) time.Duration
	// sides are the sides SetSide was given, as bits (1<<Side): two
	// different ones contradict each other, and Check refuses them.
	sides uint8

	// Misconfigured is told of the server's mistake a request found
	// (OutcomeMisconfigured: a key part naming a path parameter the route
	// does not have, a field the message lacks...), once per route: r is
	// the first request that found it there, name its route (the telemetry
	// name). The adapter logs it through the framework's logger, so that a
	// route that answers 500 (Internal) to every request says why, once,
	// where its operators look, not only in each answer. nil: not told.
	Misconfigured func(r R, name string, err error)
}

// SetSide takes side s of a read/write lock (Request.Side) for every
// request: an adapter's ReadSide and WriteSide options call it, so that
// giving both, which contradict each other, is refused by Check rather
// than won by the last.
func (c *Config[R]) SetSide(s core.Side) {
	c.Request.Side = s
	c.sides |= 1 << s
}

// maxReported bounds the routes a Policy remembers having reported. Route
// names are the server's (templates, methods), never a request's path;
// the bound only guards against a router that reports something else
// (gRPC's unknown-service handler passes any method name).
const maxReported = 4096

// Check is the one validation of what every adapter configures, so the same
// value is accepted or refused, with the same message, in every adapter.
// Each adapter calls it (through New) at construction and panics (or
// returns the error) with its own prefix. The error matches
// core.ErrInvalidOption.
//
// The rules: a nil Client is refused; there is at least one key, and a key
// made by Join has at least one part, and one made by RouteKey is alone; at most core.MaxKeysPerAcquire keys;
// AcquireOptions may not set the wait budget, NoWait, the TTL, MaxHold or
// the name; Request with AcquireOptions applied passes core.Request.Check
// (the TTL rule, core.CheckTTL, is also core.New's); SetSide was not given
// both sides; several keys are mutexes (no Limit, no side); SideByMethod
// excludes a Side and a Limit;
// and a negative ReleaseTimeout is refused (0 is the Client's).
func (c Config[R]) Check() error {
	_, err := c.check()
	return err
}

// check is Check, and returns the Request every acquire asks for: Request
// with AcquireOptions applied onto it, as core applies options, so that
// what core refuses (core.MaxWaiters(-1)) is refused here, once, and any
// core option reaches the acquire.
func (c Config[R]) check() (core.Request, error) {
	bad := func(format string, args ...any) (core.Request, error) {
		return core.Request{}, fmt.Errorf("%w: %s", core.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Client == nil:
		return bad("no *core.Client")
	case len(c.Keys) == 0:
		return bad("no key source; give one: Key(parts...) (e.g. Key(Const(\"order\"), Param(\"id\"))) or KeyFromRoute()")
	case len(c.Keys) > core.MaxKeysPerAcquire:
		return bad("at most %d keys per request, got %d", core.MaxKeysPerAcquire, len(c.Keys))
	}
	for i, k := range c.Keys {
		switch {
		case k.build == nil:
			return bad("key %d has no source", i+1)
		case k.empty:
			return bad("Key() needs at least one part")
		case k.route && len(c.Keys) > 1:
			return bad("more than one key source: KeyFromRoute() is the whole key; give it alone, or Key(...) once per key")
		}
	}
	if o := core.NewRequest(c.AcquireOptions...); o.Wait != 0 || o.NoWait || o.TTL != 0 || o.Name != "" || o.MaxHold != 0 {
		return bad("AcquireOptions may not carry core.Wait, core.NoWait, core.TTL, core.MaxHold or core.Name; use the adapter's own Wait, NoWait, TTL and MaxHold options (the name is the route or method)")
	}
	r := c.Request
	for _, o := range c.AcquireOptions {
		o(&r)
	}
	if err := r.Check(); err != nil {
		return core.Request{}, err
	}
	switch {
	case c.sides&(1<<core.ReadSide) != 0 && c.sides&(1<<core.WriteSide) != 0:
		return bad("the read side and the write side are alternatives; choose one")
	case len(c.Keys) > 1 && (r.Limit > 0 || r.Side != 0 || c.SideByMethod):
		return bad("several keys are taken together as mutexes; Limit and the read/write sides take one key")
	case c.SideByMethod && r.Limit > 0:
		return bad("Limit and a read/write side are alternatives; choose one")
	case c.SideByMethod && r.Side != 0:
		return bad("a side by method and a fixed %v side are alternatives; choose one", r.Side)
	case c.ReleaseTimeout < 0:
		return bad("ReleaseTimeout must be ≥ 0 (0: the Client's), got %v", c.ReleaseTimeout)
	}
	return r, nil
}

// Policy is a checked Config: what one adapter instance (one middleware,
// one interceptor) locks and how. It is safe for concurrent use.
type Policy[R any] struct {
	client   *core.Client
	keys     []Key[R]
	req      core.Request
	byMethod bool
	timeout  time.Duration
	retry    func(error) time.Duration
	report   func(r R, name string, err error)

	mu       sync.Mutex
	reported map[string]bool // route names whose misconfiguration was told
}

// New checks c (Config.Check) and returns its Policy.
func New[R any](c Config[R]) (*Policy[R], error) {
	req, err := c.check()
	if err != nil {
		return nil, err
	}
	if !req.NoWait && req.Wait == 0 {
		// core applies the same default to every acquire, but its
		// Observer.Unlocked (fail-open) reports the Request's Wait as
		// given, where 0 reads "one attempt".
		req.Wait = core.DefaultWait
	}
	return &Policy[R]{
		client: c.Client, keys: append([]Key[R](nil), c.Keys...), req: req, byMethod: c.SideByMethod,
		timeout: c.ReleaseTimeout, retry: c.RetryAfter, report: c.Misconfigured,
	}, nil
}

// misconfigured tells the adapter of h's misconfiguration, once per route.
func (p *Policy[R]) misconfigured(r R, name string, h *Hold) {
	if p.report == nil || h.Outcome != core.OutcomeMisconfigured {
		return
	}
	p.mu.Lock()
	first := !p.reported[name] && len(p.reported) < maxReported
	if first {
		if p.reported == nil {
			p.reported = map[string]bool{}
		}
		p.reported[name] = true
	}
	p.mu.Unlock()
	if first {
		p.report(r, name, h.Err)
	}
}

// RetryHint is the retry hint of a request refused with err: the RetryAfter
// function's, or DefaultRetryAfter; never negative.
func (p *Policy[R]) RetryHint(err error) time.Duration {
	d := DefaultRetryAfter
	if p.retry != nil {
		d = p.retry(err)
	}
	return max(d, 0)
}

// Answer is the HTTP answer to h, a hold that may not run.
func (p *Policy[R]) Answer(h *Hold) Answer {
	return AnswerFor(h.Outcome, h.Err, p.RetryHint(h.Err))
}

// Reject describes h, a hold of an RPC to procedure that may not run.
func (p *Policy[R]) Reject(h *Hold, procedure string) *Rejection {
	return p.Rejection(h.Outcome, procedure, h.Key, h.Err)
}

// Rejection describes an RPC to procedure refused with outcome o and err,
// with the retry hint where the outcome carries one.
func (p *Policy[R]) Rejection(o core.Outcome, procedure, key string, err error) *Rejection {
	r := &Rejection{Outcome: o, Procedure: procedure, Key: key, Err: err}
	if Retryable(o) {
		r.RetryAfter = p.RetryHint(err)
	}
	return r
}
