package ginlock

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Option configures the middleware.
type Option func(*config)

// Responder answers a request the middleware stops. It must write the
// response (or deliberately not); the middleware has already called
// c.Error(err) and set Retry-After where it applies, and calls c.Abort()
// after it. err matches the core sentinel of the outcome (ErrNotAcquired,
// ErrUnavailable, ErrInvalidKey, context.DeadlineExceeded, ...). A nil
// Responder restores the default answer, as in every lockkit adapter.
type Responder func(c *gin.Context, err error)

type config struct {
	guard     guard.Config[*gin.Context]
	logger    *slog.Logger
	skipper   func(*gin.Context) bool
	tokenHdr  string
	respond   guard.Responders[*gin.Context]
	onRelease func(*gin.Context, error)
}

// Key builds the lock key from parts, their values joined by core.JoinKey:
// Key(Const("order"), Param("id")) is "order:42" for /orders/42. Every part
// is required: a missing or empty one answers 400 and the handler does not run.
//
// Give Key more than once to lock several resources per request, all or
// nothing (core.Client.AcquireAll: one canonical order, so two requests
// naming the same keys in opposite orders never deadlock): a transfer
// locks Key(Const("acct"), Param("from")) and Key(Const("acct"), Param("to")).
func Key(parts ...Part) Option {
	return func(c *config) { c.guard.Keys = append(c.guard.Keys, join(parts)) }
}

// Limit admits at most n requests of one key at once (a semaphore of n per
// key, across every replica) instead of one: "at most 3 exports per
// tenant". A request that finds all n held waits like any other; past the
// wait budget (or at once with NoWait) it is answered 429 Too Many
// Requests with Retry-After (OnLimited replaces the answer).
//
// Limit(0) is the default, the key's mutex: the lock of a route without
// Limit, answered 409 when held. Limit(1) admits one request at a time too,
// but is a semaphore, another lock that does not exclude that mutex's
// routes. New panics on n < 0 or n > core.MaxPermits.
func Limit(n int) Option { return func(c *config) { c.guard.Request.Limit = n } }

// OnLimited replaces the 429 answer (Limit: every permit held past the
// wait budget, or NoWait).
func OnLimited(f Responder) Option { return on(f, guard.Limited) }

// ReadWrite takes a read/write lock on the key: GET and HEAD requests
// take the read side (many at once), every other method the write side
// (alone). Readers and writers are served in the order they came, so
// neither starves the other.
func ReadWrite() Option { return func(c *config) { c.guard.SideByMethod = true } }

// ReadSide takes the read side of the key's read/write lock for every
// request of this route, whatever its method (an explicit choice: a POST
// that only reads). WriteSide takes the write side; giving both panics.
func ReadSide() Option { return func(c *config) { c.guard.SetSide(core.ReadSide) } }

// WriteSide takes the write side of the key's read/write lock for every
// request of this route.
func WriteSide() Option { return func(c *config) { c.guard.SetSide(core.WriteSide) } }

// KeyFromRoute locks the route template plus every path parameter: identical
// requests run one at a time ("/orders/:id/pay" for id 42), different routes
// or parameters do not wait for each other. It is an explicit choice; there
// is no implicit key.
func KeyFromRoute() Option {
	return func(c *config) { c.guard.Keys = append(c.guard.Keys, guard.RouteKey[*gin.Context](reader{})) }
}

// Wait sets how long a request waits for a held lock before 409 (0 or
// unset: core.DefaultWait, 10s, as in core; negative: New panics). The
// request's own context still bounds it. Wait and NoWait are alternatives:
// giving both panics.
func Wait(d time.Duration) Option { return func(c *config) { c.guard.Request.Wait = d } }

// NoWait answers 409 at once when the lock is held (the request does not
// queue behind this Client's waiters either).
func NoWait() Option { return func(c *config) { c.guard.Request.NoWait = true } }

// TTL sets the lease TTL (0: the Client's; below core.MinTTL New panics);
// the lease is renewed while the handler runs, so the TTL is only how long
// a crashed replica blocks others.
func TTL(d time.Duration) Option { return func(c *config) { c.guard.Request.TTL = d } }

// MaxHold bounds how long a request holds its lock (core.MaxHold): d after
// the lock was taken, the handler's context ends with cause core.ErrMaxHold
// and the lock is no longer renewed; it is released when the handler
// returns (OnReleaseError is told, err matching core.ErrMaxHold), at once
// while the handler reads the request body or writes the answer (its
// client decides how long that takes: guard.Hold.BeginIO), or expires
// within one TTL if the handler never returns. Default 0: no bound. Use it
// where a client can keep a handler busy (a request body sent slowly); the
// server's ReadTimeout bounds the rest.
func MaxHold(d time.Duration) Option { return func(c *config) { c.guard.Request.MaxHold = d } }

// FailOpen runs the handler without the lock when Redis is unavailable
// (the Observer's Unlocked is told); the default is fail-closed (503).
func FailOpen() Option { return func(c *config) { c.guard.Request.FailOpen = true } }

// ReleaseTimeout bounds the release after the handler returned (0: the
// Client's, core.WithReleaseTimeout, 3s by default).
func ReleaseTimeout(d time.Duration) Option { return func(c *config) { c.guard.ReleaseTimeout = d } }

// AcquireOptions passes further core options to every acquire
// (core.Reentrant(), core.MaxWaiters(n), core.NoRenew(), ...). The wait
// budget, NoWait, the TTL and MaxHold are this package's own options:
// passing core.Wait, core.NoWait, core.TTL, core.MaxHold or core.Name here
// makes New panic rather than silently override them.
func AcquireOptions(opts ...core.AcquireOption) Option {
	return func(c *config) { c.guard.AcquireOptions = append(c.guard.AcquireOptions, opts...) }
}

// Logger sets the logger that is told, once per route, of a route the
// middleware cannot lock because of the server's configuration (a Param
// the route does not have...): every request of it is answered 500, and
// with gin.New() nothing else would say why (gin's logger prints only
// status lines; the cause also goes to c.Error). Default: slog.Default().
func Logger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Skipper skips the middleware for requests where f returns true.
func Skipper(f func(*gin.Context) bool) Option { return func(c *config) { c.skipper = f } }

// RetryAfter sets the Retry-After of 409 and 503 answers from the error
// (default 1s; rounded up to whole seconds). The holder's remaining TTL is
// no guide: renewal keeps it near the full TTL.
func RetryAfter(f func(error) time.Duration) Option {
	return func(c *config) { c.guard.RetryAfter = f }
}

// TokenHeader sets the response header that carries the lease's fencing
// token (e.g. "Lock-Token"); off by default.
func TokenHeader(name string) Option { return func(c *config) { c.tokenHdr = name } }

// OnContended replaces the 409 answer (lock held past the wait budget, or
// NoWait).
func OnContended(f Responder) Option { return on(f, guard.Contended) }

// OnUnavailable replaces the 503 answers: Redis unreachable (fail-closed),
// the request's deadline passing while it waited, the Client closed.
func OnUnavailable(f Responder) Option { return on(f, guard.Unavailable) }

// OnBadKey replaces the 400 answer (a key part missing from the request).
func OnBadKey(f Responder) Option { return on(f, guard.BadKey) }

// OnMisconfigured replaces the 500 answer (the server is misconfigured: a
// Param the route does not have, a nested lock of the same key).
func OnMisconfigured(f Responder) Option { return on(f, guard.Misconfigured) }

// OnClientGone replaces what happens when the client went away while
// waiting; by default nothing is written and 499 is recorded as the status.
func OnClientGone(f Responder) Option { return on(f, guard.ClientGone) }

// OnReleaseError is told, after the handler returned, when the lease was
// lost while the handler ran (err matches core.ErrLost) or held for its
// MaxHold (core.ErrMaxHold): its work was not protected to its end; or
// when the release failed. The answer is already written. Default:
// c.Error(err), so gin's logger and otelgin see it.
func OnReleaseError(f func(c *gin.Context, err error)) Option {
	return func(c *config) { c.onRelease = f }
}

// on sets f as the answer of r's outcomes; a nil f restores the default
// answer (guard.Responders.On), so it is passed on as nil, not wrapped.
func on(f Responder, r guard.Refusal) Option {
	var g func(*gin.Context, *guard.Hold) error
	if f != nil {
		g = func(gc *gin.Context, h *guard.Hold) error { f(gc, h.Err); return nil }
	}
	return func(c *config) { c.respond.On(g, r) }
}
