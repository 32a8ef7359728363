// Package adapt is the part of every lock adapter (gin, echo, echo v5, gRPC)
// that does not depend on the framework: acquire on the request's context,
// hand the handler a context bound to the lease, release with a detached
// context, and classify what went wrong. Adapters only add the framework glue
// (reading key parts, writing the response), so all of them behave the same.
package adapt

import (
	"context"
	"errors"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Defaults shared by the adapters.
const (
	// DefaultWait is the wait budget of a request when neither Wait nor NoWait
	// is given: a request should not wait for a lock longer than a client waits
	// for an answer.
	DefaultWait = 10 * time.Second
	// DefaultReleaseTimeout bounds the release after the handler returned.
	DefaultReleaseTimeout = 5 * time.Second
	// DefaultRetryAfter is the Retry-After / retry hint of a contended request.
	// The holder's remaining TTL is no guide: renewal keeps it near the full TTL.
	DefaultRetryAfter = time.Second
)

// Config is what an adapter needs to guard a handler.
type Config struct {
	Client         *core.Client
	Wait           time.Duration // 0: DefaultWait (unless NoWait)
	NoWait         bool
	TTL            time.Duration // 0: the Client's
	FailOpen       bool          // run the handler unlocked when Redis is unavailable
	ReleaseTimeout time.Duration // 0: DefaultReleaseTimeout
	Options        []core.AcquireOption
}

// Kind is what happened to a request's acquire.
type Kind uint8

// Kinds of outcome, in the order of DESIGN.md's table.
const (
	Acquired      Kind = iota // the handler runs with the lease
	Contended                 // held by another past the wait budget, or NoWait: 409 / Aborted
	Unavailable               // Redis unreachable, fail-closed: 503 / Unavailable
	Unlocked                  // Redis unreachable, fail-open: the handler runs without the lock
	BadKey                    // the key cannot be derived from the request: 400 / InvalidArgument
	Misconfigured             // server-side mistake (bad option, nested lock of the same key): 500 / Internal
	ClientGone                // the request was cancelled while waiting: write nothing / Canceled
	Deadline                  // the request's deadline passed while waiting: 503 / DeadlineExceeded
)

func (k Kind) String() string {
	return [...]string{"acquired", "contended", "unavailable", "unlocked", "bad_key", "misconfigured", "client_gone", "deadline"}[k]
}

// Classify tells what an acquire error means for a request. The request's
// own context decides "client gone" and "deadline", never the error's text.
func Classify(reqCtx context.Context, err error) Kind {
	switch {
	case err == nil:
		return Acquired
	case errors.Is(err, core.ErrKeyConfig), errors.Is(err, core.ErrInvalidKey):
		return KeyKind(err)
	case reqCtx.Err() != nil:
		if errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
			return Deadline
		}
		return ClientGone
	case errors.Is(err, core.ErrNotAcquired):
		return Contended
	case errors.Is(err, core.ErrInvalidOption), errors.Is(err, core.ErrWouldDeadlock):
		return Misconfigured
	}
	return Unavailable // ErrUnavailable, ErrClosed, anything unexpected from Redis
}

// KeyKind classifies an error from building a request's key:
// Misconfigured for the server's mistake (core.ErrKeyConfig), BadKey for
// the caller's (a missing or empty part, an unreadable value).
func KeyKind(err error) Kind {
	if errors.Is(err, core.ErrKeyConfig) {
		return Misconfigured
	}
	return BadKey
}

// HTTPStatus is the status DESIGN.md gives each kind (0: write nothing).
func (k Kind) HTTPStatus() int {
	switch k {
	case Contended:
		return 409
	case Unavailable, Deadline:
		return 503
	case BadKey:
		return 400
	case Misconfigured:
		return 500
	}
	return 0
}

// Guard is one request's hold on a lock.
type Guard struct {
	// Lease is nil when the handler runs unlocked (fail-open).
	Lease *core.Lease
	// Ctx is the handler's context: the request's values plus the lease (and
	// the Observer's hold span), cancelled when the request ends or the lease
	// is lost (context.Cause ErrLost).
	Ctx context.Context
	// Kind is Acquired or Unlocked when the handler may run; otherwise the
	// outcome to answer with, and Err the acquire error.
	Kind Kind
	Err  error

	reqCtx  context.Context
	stop    context.CancelFunc
	timeout time.Duration
}

// OK reports whether the handler may run.
func (g *Guard) OK() bool { return g.Kind == Acquired || g.Kind == Unlocked }

// Acquire waits for key on reqCtx. name is the telemetry name (route
// template, RPC full method), never part of the key.
func (c *Config) Acquire(reqCtx context.Context, key, name string) *Guard {
	opts := make([]core.AcquireOption, 0, 4+len(c.Options))
	opts = append(opts, core.Name(name))
	switch {
	case c.NoWait:
		opts = append(opts, core.NoWait())
	case c.Wait > 0:
		opts = append(opts, core.Wait(c.Wait))
	default:
		opts = append(opts, core.Wait(DefaultWait))
	}
	if c.TTL > 0 {
		opts = append(opts, core.TTL(c.TTL))
	}
	opts = append(opts, c.Options...)
	g := &Guard{reqCtx: reqCtx, timeout: c.ReleaseTimeout}
	if g.timeout <= 0 {
		g.timeout = DefaultReleaseTimeout
	}
	l, err := c.Client.Acquire(reqCtx, key, opts...)
	g.Kind, g.Err = Classify(reqCtx, err), err
	switch {
	case g.Kind == Acquired:
		g.Lease = l
		g.Ctx, g.stop = l.Bind(reqCtx)
	case g.Kind == Unavailable && c.FailOpen:
		g.Kind = Unlocked
		g.Ctx = reqCtx
		c.Client.Observer().Unlocked(reqCtx, core.AcquireInfo{Key: key, Name: name, Start: time.Now()}, err)
	}
	return g
}

// Release ends the hold: the handler's context is cancelled and the lock
// released with a context detached from the request (plus a timeout), so a
// client that hung up or a handler that panicked never strands the lock.
// Call it in a defer right after a successful Acquire; it is a no-op when
// nothing is held. It returns the release error (ErrNotHeld after a loss).
func (g *Guard) Release() error {
	if g.Lease == nil {
		return nil
	}
	g.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.reqCtx), g.timeout)
	defer cancel()
	return g.Lease.Release(ctx)
}

// RetryAfter returns f(err) or DefaultRetryAfter, rounded up to whole
// seconds (the HTTP header's unit), at least 1.
func RetryAfter(f func(error) time.Duration, err error) time.Duration {
	d := DefaultRetryAfter
	if f != nil {
		d = f(err)
	}
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1).Truncate(time.Second)
}
