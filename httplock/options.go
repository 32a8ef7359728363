package httplock

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Option configures the middleware.
type Option func(*config)

// Responder answers a request the middleware stops, instead of the default
// problem+json answer. Retry-After is already set where it applies. err
// matches the core sentinel of the outcome (core.ErrNotAcquired,
// core.ErrUnavailable, core.ErrInvalidKey, context.DeadlineExceeded, ...).
// A nil Responder restores the default answer, as in every lockkit adapter.
type Responder func(w http.ResponseWriter, r *http.Request, err error)

type config struct {
	guard     guard.Config[*http.Request]
	logger    *slog.Logger
	name      func(*http.Request) string
	skipper   func(*http.Request) bool
	tokenHdr  string
	respond   guard.Responders[exchange]
	onRelease func(*http.Request, error)
}

// Key builds the lock key from parts, their values joined by core.JoinKey:
// Key(Const("order"), Param("id")) is "order:42" for /orders/42, the key
// every lockkit adapter builds from the same parts. Every part is
// required: a missing or empty one answers 400 and the handler does not run.
//
// Give Key more than once to lock several resources per request, all or
// nothing (core.Client.AcquireAll: one canonical order, so two requests
// naming the same keys in opposite orders never deadlock).
func Key(parts ...Part) Option {
	return func(c *config) {
		ps := make([]guard.Part[*http.Request], len(parts))
		for i, p := range parts {
			ps[i] = p.p
		}
		c.guard.Keys = append(c.guard.Keys, guard.Join(ps...))
	}
}

// KeyFromRoute locks the matched pattern's path (without its method and
// host) plus every path wildcard's value: identical requests run one at a
// time ("/orders/{id}/pay" for id 42), different patterns or wildcards do
// not wait for each other. It is an explicit choice; there is no implicit
// key. Key and KeyFromRoute are alternatives.
func KeyFromRoute() Option {
	return func(c *config) { c.guard.Keys = append(c.guard.Keys, guard.RouteKey[*http.Request](reader{})) }
}

// Limit admits at most n requests of one key at once (a semaphore of n per
// key, across every replica) instead of one; past the wait budget (or at
// once with NoWait) a request is answered 429 with Retry-After.
//
// Limit(0) is the default, the key's mutex: the lock of a pattern without
// Limit, answered 409 when held. Limit(1) admits one request at a time too,
// but is a semaphore, another lock that does not exclude that mutex's
// patterns. New panics on n < 0 or n > core.MaxPermits.
func Limit(n int) Option { return func(c *config) { c.guard.Request.Limit = n } }

// ReadWrite takes a read/write lock on the key: GET and HEAD take the
// read side (many at once), every other method the write side (alone).
func ReadWrite() Option { return func(c *config) { c.guard.SideByMethod = true } }

// ReadSide takes the read side for every request, whatever its method.
// ReadSide and WriteSide are alternatives: giving both panics.
func ReadSide() Option { return func(c *config) { c.guard.SetSide(core.ReadSide) } }

// WriteSide takes the write side for every request.
func WriteSide() Option { return func(c *config) { c.guard.SetSide(core.WriteSide) } }

// OnLimited replaces the 429 answer (Limit: every permit held past the
// wait budget, or NoWait).
func OnLimited(f Responder) Option { return on(f, guard.Limited) }

// Wait sets how long a request waits for a held lock before 409 (0 or
// unset: core.DefaultWait, 10s, as in core; negative: New panics). The
// request's own context still bounds it. Wait and NoWait are alternatives:
// giving both panics.
func Wait(d time.Duration) Option { return func(c *config) { c.guard.Request.Wait = d } }

// NoWait answers 409 at once when the lock is held.
func NoWait() Option { return func(c *config) { c.guard.Request.NoWait = true } }

// TTL sets the lease TTL (0: the Client's; below core.MinTTL New panics).
func TTL(d time.Duration) Option { return func(c *config) { c.guard.Request.TTL = d } }

// FailOpen runs the handler without the lock when Redis is unavailable
// (the Observer's Unlocked is told); the default is fail-closed (503).
func FailOpen() Option { return func(c *config) { c.guard.Request.FailOpen = true } }

// ReleaseTimeout bounds the release after the handler returned (0: the
// Client's, core.WithReleaseTimeout, 3s by default).
func ReleaseTimeout(d time.Duration) Option { return func(c *config) { c.guard.ReleaseTimeout = d } }

// MaxHold bounds how long a request holds its lock (core.MaxHold): d after
// the lock was taken, the handler's context ends with cause core.ErrMaxHold
// and the lock is no longer renewed; it is released when the handler
// returns (OnReleaseError is told, err matching core.ErrMaxHold), at once
// while the handler reads the request body or writes the answer (its
// client decides how long that takes: guard.Hold.BeginIO), or expires
// within one TTL if the handler never returns. Default 0: no bound.
func MaxHold(d time.Duration) Option { return func(c *config) { c.guard.Request.MaxHold = d } }

// AcquireOptions passes further core options to every acquire
// (core.Reentrant(), core.MaxWaiters(n), core.NoRenew()). core.Wait,
// core.NoWait, core.TTL, core.MaxHold and core.Name make New panic: this
// package's own options own them.
func AcquireOptions(opts ...core.AcquireOption) Option {
	return func(c *config) { c.guard.AcquireOptions = append(c.guard.AcquireOptions, opts...) }
}

// Name sets the lock's telemetry name from the request (default: r.Pattern,
// which http.ServeMux and chi set to the matched pattern). It is never part
// of the key, so it must be low-cardinality: a route template, not a path.
func Name(f func(*http.Request) string) Option { return func(c *config) { c.name = f } }

// Logger sets the logger that is told, once per pattern, of a pattern the
// middleware cannot lock because of the server's configuration (a Param
// the pattern does not have, a whole mux wrapped...): every request of it
// is answered 500. It also hears of release errors without
// OnReleaseError. Default: slog.Default().
func Logger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Skipper skips the middleware for requests where f returns true.
func Skipper(f func(*http.Request) bool) Option { return func(c *config) { c.skipper = f } }

// RetryAfter sets the Retry-After of 409 and 503 answers from the error
// (default 1s; rounded up to whole seconds).
func RetryAfter(f func(error) time.Duration) Option {
	return func(c *config) { c.guard.RetryAfter = f }
}

// TokenHeader sets the response header that carries the lease's fencing
// token (e.g. "Lock-Token"); off by default.
func TokenHeader(name string) Option { return func(c *config) { c.tokenHdr = name } }

// OnContended replaces the 409 answer (lock held past the wait budget, or
// NoWait).
func OnContended(f Responder) Option { return on(f, guard.Contended) }

// OnUnavailable replaces the 503 answers: Redis unavailable (fail-closed),
// the request's deadline passing while it waited, the Client closed.
func OnUnavailable(f Responder) Option { return on(f, guard.Unavailable) }

// OnBadKey replaces the 400 answer (a key part missing from the request).
func OnBadKey(f Responder) Option { return on(f, guard.BadKey) }

// OnMisconfigured replaces the 500 answer (the server is misconfigured: a
// Param the pattern does not have, a nested lock of the same key).
func OnMisconfigured(f Responder) Option { return on(f, guard.Misconfigured) }

// OnClientGone replaces what happens when the client went away while
// waiting (by default nothing is written).
func OnClientGone(f Responder) Option { return on(f, guard.ClientGone) }

// OnReleaseError is told, after the handler returned, when the lease was
// lost while the handler ran (err matches core.ErrLost) or held for its
// MaxHold (core.ErrMaxHold), or the release failed. Default: Logger's
// logger, at level Error.
func OnReleaseError(f func(r *http.Request, err error)) Option {
	return func(c *config) { c.onRelease = f }
}

// on sets f as the answer of r's outcomes; a nil f restores the default
// answer (guard.Responders.On), so it is passed on as nil, not wrapped.
func on(f Responder, r guard.Refusal) Option {
	var g func(exchange, *guard.Hold) error
	if f != nil {
		g = func(x exchange, h *guard.Hold) error { f(x.w, x.r, h.Err); return nil }
	}
	return func(c *config) { c.respond.On(g, r) }
}

// exchange is a request and its response writer, as a Responder takes them.
type exchange struct {
	w http.ResponseWriter
	r *http.Request
}
