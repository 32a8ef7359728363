package connectlock

import (
	"context"
	"log/slog"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

type config struct {
	rpc    rpckey.Config[*Call]
	policy *rpckey.Policy[*Call]
	logger *slog.Logger
	// idem are Idempotent's options; idempotent: Idempotent was given.
	idem        []IdempotencyOption
	idempotent  bool
	idempotency *idempotency
}

// The kind of lock.

// Limit admits at most n calls of one key at once (a semaphore of n per
// key, across every replica); past the wait budget (or at once with NoWait)
// a call is answered connect.CodeResourceExhausted with a retry hint.
//
// Limit(0) is the default, the key's mutex: the lock of an interceptor
// without Limit, answered connect.CodeAborted when held. Limit(1) admits
// one call at a time too, but is a semaphore, another lock that does not
// exclude that mutex's calls. The interceptor constructors panic on n < 0
// or n > core.MaxPermits.
func Limit(n int) Option { return func(c *config) { c.rpc.Guard.Request.Limit = n } }

// OnLimited replaces the CodeResourceExhausted answer (Limit: every permit
// held).
func OnLimited(f Responder) Option { return on(f, guard.Limited) }

// ReadSide takes the read side of the key's read/write lock; WriteSide the
// write side. An RPC has no safe methods to tell reads by: build one
// interceptor for the procedures that only read and one for those that
// write, with the same key. Giving both to one interceptor panics.
func ReadSide() Option { return func(c *config) { c.rpc.Guard.SetSide(core.ReadSide) } }

// WriteSide takes the write side of the key's read/write lock.
func WriteSide() Option { return func(c *config) { c.rpc.Guard.SetSide(core.WriteSide) } }

// The time a call waits for, and holds, its lock.

// Wait sets the wait budget: how long a call waits for a lock held by
// another before it is answered connect.CodeAborted (0: core.DefaultWait,
// 10s, as in core; negative: the interceptor panics). Wait and NoWait are
// alternatives.
func Wait(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.Wait = d } }

// NoWait answers connect.CodeAborted at once when the lock is held.
func NoWait() Option { return func(c *config) { c.rpc.Guard.Request.NoWait = true } }

// TTL sets the lease TTL of the calls (0: the Client's; below core.MinTTL
// the interceptor panics).
func TTL(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.TTL = d } }

// MaxHold bounds how long a call holds its lock (core.MaxHold): then the
// handler's context ends with cause core.ErrMaxHold and the lock is no
// longer renewed; it is released when the handler returns. A stream's
// handler waiting on its client then, in Receive or Send, or starting to
// later, is idle: its lock is released at once (that Receive fails; that
// Send's message still goes), so a stream whose client stays silent or
// stops reading cannot keep its key. Default 0: no bound.
func MaxHold(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.MaxHold = d } }

// OnLost replaces the CodeAborted answer of a call whose handler failed
// because its lease ended while it ran (lost, or held for its MaxHold).
func OnLost(f Responder) Option { return on(f, guard.Lost) }

// What happens when the lock fails.

// FailOpen runs the handler without the lock when Redis is unavailable
// (the Client's Observer is told). The default is fail-closed:
// connect.CodeUnavailable.
func FailOpen() Option { return func(c *config) { c.rpc.Guard.Request.FailOpen = true } }

// ReleaseTimeout bounds the release after the handler returned (0: the
// Client's, core.WithReleaseTimeout), on a context detached from the call.
func ReleaseTimeout(d time.Duration) Option {
	return func(c *config) { c.rpc.Guard.ReleaseTimeout = d }
}

// OnReleaseError is told, after the handler returned, when the lease was
// lost while the handler ran (err matches core.ErrLost) or held for its
// MaxHold (core.ErrMaxHold), or the release failed. Default: Logger's
// logger, at level Error.
func OnReleaseError(f func(ctx context.Context, procedure string, err error)) Option {
	return func(c *config) { c.rpc.OnRelease = f }
}

// Logger sets the logger that is told, once per procedure, of a procedure
// the interceptor cannot lock because of the server's configuration (a
// field its message lacks, no key source...): every call of it is answered
// CodeInternal. It also hears of release errors without OnReleaseError.
// Default: slog.Default().
func Logger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// AcquireOptions adds core acquire options (core.Reentrant,
// core.MaxWaiters, core.NoRenew...) to every acquire. core.Wait,
// core.NoWait, core.TTL, core.MaxHold and core.Name make the interceptor
// panic: this package's own options own them.
func AcquireOptions(opts ...core.AcquireOption) Option {
	return func(c *config) { c.rpc.Guard.AcquireOptions = append(c.rpc.Guard.AcquireOptions, opts...) }
}

// newConfig applies opts and panics, at construction, on a configuration
// that could only fail at run time (rpckey.New's and guard's rules, those
// of every lockkit RPC adapter).
func newConfig(client *core.Client, opts []Option, stream bool) *config {
	c := &config{rpc: rpckey.Config[*Call]{Guard: guard.Config[*Call]{Client: client}, Stream: stream, Msg: callMsg, Procedure: callProcedure,
		Respond: guard.RPCResponders{}, Wire: wire}, logger: slog.Default()}
	for _, o := range opts {
		o(c)
	}
	if c.rpc.OnRelease == nil {
		c.rpc.OnRelease = func(ctx context.Context, procedure string, err error) {
			c.logger.ErrorContext(ctx, "connectlock: lock release", "procedure", procedure, "error", err)
		}
	}
	c.rpc.Guard.Misconfigured = func(call *Call, procedure string, err error) {
		c.logger.ErrorContext(call.Ctx, "connectlock: the procedure's lock is misconfigured: every call is answered internal", "procedure", procedure, "error", err)
	}
	p, err := rpckey.New(c.rpc)
	if err != nil {
		kind := map[bool]string{false: "UnaryInterceptor", true: "StreamInterceptor"}[stream]
		panic("connectlock: " + kind + ": " + err.Error())
	}
	c.policy = p
	if c.idempotent {
		kind := map[bool]string{false: "UnaryInterceptor", true: "StreamInterceptor"}[stream]
		c.idempotency = newIdempotency(client, c.idem, stream, kind, c.logger)
	}
	return c
}
