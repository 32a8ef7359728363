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
	"net/http"
	"strconv"
	"strings"
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
	// Limit > 0 takes a permit of a semaphore of Limit per key instead of
	// a mutex: at most Limit requests of one key at once, 429 (gRPC
	// ResourceExhausted) when none frees within the wait budget.
	Limit int
	// RW takes a side of a read/write lock per key instead of a mutex.
	RW RW
	// Keys is how many keys each request names (several: they are taken
	// together, all or nothing, as mutexes). 0 is 1.
	Keys int
}

// RW is which side of a read/write lock a request takes.
type RW uint8

// Read/write modes.
const (
	RWNone     RW = iota // a mutex (or a permit, with Limit)
	RWByMethod           // the read side for safe methods (GET, HEAD), the write side otherwise
	RWRead               // always the read side
	RWWrite              // always the write side
)

// SafeMethod reports whether an HTTP method takes the read side under
// RWByMethod: GET and HEAD. Every other method, OPTIONS included, takes the
// write side: a handler registered for any method (a ServeMux pattern
// without one, gin's Any) may write whatever the method.
func SafeMethod(method string) bool { return method == "GET" || method == "HEAD" }

// Preflight reports whether a request is a CORS preflight: OPTIONS with
// an Origin and an Access-Control-Request-Method header (the Fetch
// standard's definition). Only a preflight passes a lock unlocked: it asks
// whether a request may be sent and runs no handler of the resource. Any
// other OPTIONS reaching a locked handler is locked like any method, or a
// client could run a method-agnostic handler beside the lock's holder by
// sending OPTIONS.
func Preflight(method string, h http.Header) bool {
	return method == http.MethodOptions && h.Get("Origin") != "" && h.Get("Access-Control-Request-Method") != ""
}

// Guard is one request's hold on a lock.
type Guard struct {
	// Lease is nil when the handler runs unlocked (fail-open); with several
	// keys it is the last of them (Multi has them all).
	Lease *core.Lease
	Multi *core.MultiLease // several keys, taken together
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
// template, RPC full method), never part of the key; method is the HTTP
// method ("" for gRPC), which RWByMethod reads. c must have passed Check.
func (c *Config) Acquire(reqCtx context.Context, key, name, method string) *Guard {
	s := c.settings(name)
	switch {
	case c.Limit > 0:
		s.Kind, s.Limit = corehook.Semaphore, c.Limit
	case c.RW == RWRead, c.RW == RWByMethod && SafeMethod(method):
		s.Kind = corehook.Read
	case c.RW != RWNone:
		s.Kind = corehook.Write
	}
	g := &Guard{key: key, reqCtx: reqCtx, timeout: c.ReleaseTimeout}
	lease, err := corehook.Acquire(reqCtx, c.Client, key, s, c.opts())
	l, _ := lease.(*core.Lease)
	if g.settle(c, name, err) {
		g.Lease = l
		g.Ctx, g.stop = l.Bind(reqCtx)
	}
	return g
}

// AcquireAll waits for every key on reqCtx, all or nothing, in the
// engine's canonical order (core.Client.AcquireAll): a request naming
// several resources (a transfer's two accounts). c must have passed Check.
func (c *Config) AcquireAll(reqCtx context.Context, keys []string, name string) *Guard {
	g := &Guard{key: strings.Join(keys, ", "), reqCtx: reqCtx, timeout: c.ReleaseTimeout}
	lease, err := corehook.AcquireAll(reqCtx, c.Client, keys, c.settings(name), c.opts())
	m, _ := lease.(*core.MultiLease)
	if g.settle(c, name, err) {
		ls := m.Leases()
		g.Multi, g.Lease = m, ls[len(ls)-1]
		g.Ctx, g.stop = m.Bind(reqCtx)
	}
	return g
}

func (c *Config) settings(name string) corehook.Settings {
	s := corehook.Settings{Name: name, NoWait: c.NoWait, TTL: c.TTL}
	if !c.NoWait {
		s.Wait = c.Wait
		if s.Wait <= 0 {
			s.Wait = DefaultWait
		}
	}
	return s
}

func (c *Config) opts() any {
	if len(c.Options) > 0 {
		return c.Options
	}
	return nil
}

// settle records the acquire's outcome; true: the lock is held (the caller
// binds the handler's context to it).
func (g *Guard) settle(c *Config, name string, err error) bool {
	reqCtx := g.reqCtx
	g.Outcome, g.Err = core.Classify(reqCtx, err), err
	switch {
	case g.Outcome == core.OutcomeAcquired:
		return true
	case g.Outcome == core.OutcomeUnavailable && c.FailOpen:
		// Only a Redis that did not answer runs the handler unlocked: never
		// a lock seen held, an ended request or a closed Client (their own
		// outcomes).
		g.Outcome = core.OutcomeUnlocked
		g.Ctx = reqCtx
		corehook.Unlocked(reqCtx, c.Client, g.key, name, err)
	}
	return false
}

// TokenHeader is the value of the fencing-token header: the lease's token,
// or with several keys their tokens in the order of the keys taken
// (canonical), comma-separated; "" when nothing is held.
func (g *Guard) TokenHeader() string {
	if g.Multi != nil {
		ls := g.Multi.Leases()
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = strconv.FormatInt(l.Token(), 10)
		}
		return strings.Join(parts, ",")
	}
	if g.Lease == nil {
		return ""
	}
	return strconv.FormatInt(g.Lease.Token(), 10)
}

// Lost reports whether the hold was lost (any of its leases).
func (g *Guard) Lost() bool {
	if g.Multi != nil {
		return isLost(g.Multi.Err())
	}
	return g.Lease != nil && isLost(g.Lease.Err())
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
	var err error
	if g.Multi != nil {
		err = g.Multi.Release(ctx)
	} else {
		err = g.Lease.Release(ctx)
	}
	if g.Lost() {
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

// KeyFunc builds one of a request's keys.
type KeyFunc[R any] func(R) (string, error)

// AcquireRequest builds request r's keys with keys and acquires them: one
// key as Acquire does, several together as AcquireAll does. It returns the
// guard and the key (several joined with ", ") for the adapter's answers
// and logs. A key that cannot be built (a part missing from the request,
// a route without the parameter) gives a guard that is not OK, with the
// outcome Classify gives that error (OutcomeBadKey, OutcomeMisconfigured).
func AcquireRequest[R any](c *Config, reqCtx context.Context, r R, keys []KeyFunc[R], name, method string) (*Guard, string) {
	if len(keys) == 1 {
		key, err := keys[0](r)
		if err != nil {
			return &Guard{Outcome: core.Classify(nil, err), Err: err}, key
		}
		return c.Acquire(reqCtx, key, name, method), key
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		var err error
		if ks[i], err = k(r); err != nil {
			return &Guard{Outcome: core.Classify(nil, err), Err: err}, ks[i]
		}
	}
	g := c.AcquireAll(reqCtx, ks, name)
	return g, g.key
}

// ParseRW reads the read/write mode of a configuration given as a string
// (the echo adapters' ReadWrite field): "" none, "method" by method,
// "read" or "write" one side always. Anything else is refused.
func ParseRW(s string) (RW, error) {
	switch s {
	case "":
		return RWNone, nil
	case "method":
		return RWByMethod, nil
	case "read":
		return RWRead, nil
	case "write":
		return RWWrite, nil
	}
	return RWNone, fmt.Errorf("%w: ReadWrite %q: want \"\", \"method\", \"read\" or \"write\"", core.ErrInvalidOption, s)
}
