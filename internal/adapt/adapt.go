// Package adapt is the part of every lock adapter (gin, echo, echo v5,
// net/http, gRPC) that depends on no framework and no protocol: the options
// they share and their one validation, acquire on the request's context,
// the handler's context bound to the lease, and the release with a detached
// context. Outcomes are core.Outcome; httplock maps them to HTTP and
// grpclock to gRPC. Adapters only add the framework glue (reading key
// parts, writing the answer), so all of them behave the same.
package adapt

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/corehook"
)

// Defaults shared by the adapters.
const (
	// DefaultWait is the wait budget of a request when neither Wait nor NoWait
	// is given (a zero Wait is "not given": echo's zero-value Config must
	// work): a request should not wait for a lock longer than a client waits
	// for an answer.
	DefaultWait = 10 * time.Second
	// DefaultRetryAfter is the retry hint of a refused request.
	// The holder's remaining TTL is no guide: renewal keeps it near the full TTL.
	DefaultRetryAfter = time.Second
)

// Config is what an adapter needs to guard a handler. Every adapter fills
// it from its own options, under the same names, and validates it with
// Check.
type Config struct {
	Client         *core.Client
	Wait           time.Duration // 0: DefaultWait (unless NoWait)
	NoWait         bool
	TTL            time.Duration // 0: the Client's
	FailOpen       bool          // run the handler unlocked when Redis is unavailable
	ReleaseTimeout time.Duration // 0: the Client's (core.WithReleaseTimeout)
	Options        []core.AcquireOption
}

// Guard is one request's hold on a lock.
type Guard struct {
	// Lease is nil when the handler runs unlocked (fail-open).
	Lease *core.Lease
	// Ctx is the handler's context: the request's values plus the lease (and
	// the Observer's hold span), cancelled when the request ends or the lease
	// is lost (context.Cause ErrLost).
	Ctx context.Context
	// Outcome is OutcomeAcquired or OutcomeUnlocked when the handler may
	// run; otherwise the outcome to answer with, and Err the acquire error.
	Outcome core.Outcome
	Err     error

	key     string
	reqCtx  context.Context
	stop    context.CancelFunc
	timeout time.Duration
}

// OK reports whether the handler may run.
func (g *Guard) OK() bool {
	return g.Outcome == core.OutcomeAcquired || g.Outcome == core.OutcomeUnlocked
}

// Acquire waits for key on reqCtx. name is the telemetry name (route
// template, RPC full method), never part of the key. c must have passed
// Check.
func (c *Config) Acquire(reqCtx context.Context, key, name string) *Guard {
	s := corehook.Settings{Name: name, NoWait: c.NoWait, TTL: c.TTL}
	if !c.NoWait {
		s.Wait = c.Wait
		if s.Wait <= 0 {
			s.Wait = DefaultWait
		}
	}
	g := &Guard{key: key, reqCtx: reqCtx, timeout: c.ReleaseTimeout}
	var opts any
	if len(c.Options) > 0 {
		opts = c.Options
	}
	lease, err := corehook.Acquire(reqCtx, c.Client, key, s, opts)
	l, _ := lease.(*core.Lease)
	g.Outcome, g.Err = core.Classify(reqCtx, err), err
	switch {
	case g.Outcome == core.OutcomeAcquired:
		g.Lease = l
		g.Ctx, g.stop = l.Bind(reqCtx)
	case g.Outcome == core.OutcomeUnavailable && c.FailOpen:
		// Only a Redis that did not answer runs the handler unlocked: never
		// a lock seen held, an ended request or a closed Client (their own
		// outcomes).
		g.Outcome = core.OutcomeUnlocked
		g.Ctx = reqCtx
		corehook.Unlocked(reqCtx, c.Client, key, name, err)
	}
	return g
}

// Release ends the hold: the handler's context is cancelled and the lock
// released with a context detached from the request (bounded by
// ReleaseTimeout, or the Client's release timeout), so a client that hung
// up or a handler that panicked never strands the lock. Call it in a defer
// right after a successful Acquire; it is a no-op when nothing is held.
//
// It returns what the adapter reports through its release-error hook: an
// error matching core.ErrLost when the lease was lost while the handler
// ran (the handler's work was not protected to its end), otherwise the
// release error, or nil.
func (g *Guard) Release() error {
	if g.Lease == nil {
		return nil
	}
	g.stop()
	ctx := context.WithoutCancel(g.reqCtx)
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	err := g.Lease.Release(ctx)
	if isLost(g.Lease.Err()) {
		return fmt.Errorf("lockkit: lock %q lost while the handler ran: %w", g.key, core.ErrLost)
	}
	return err
}

// RetryHint is f(err), or DefaultRetryAfter when f is nil; never negative.
func RetryHint(f func(error) time.Duration, err error) time.Duration {
	d := DefaultRetryAfter
	if f != nil {
		d = f(err)
	}
	return max(d, 0)
}
