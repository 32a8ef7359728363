package grpclock

import (
	"context"
	"time"

	"google.golang.org/grpc/grpclog"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// Option configures an interceptor. Each interceptor keeps its own copy of
// the configuration: there is no global state.
type Option func(*config)

type config struct {
	rpc    rpckey.Config[*Call]
	policy *rpckey.Policy[*Call]
	// idem are Idempotent's options; idempotent: Idempotent was given.
	idem        []IdempotencyOption
	idempotent  bool
	idempotency *idempotency
}

// Key makes the lock key from parts, their values joined like every lockkit
// adapter joins them (core.JoinKey): Key(Const("order"), Field("order_id"))
// gives "order:42", the key ginlock and echolock build for /orders/42. It
// replaces the default of unary calls, the message's LockKey(). Give Key
// more than once to lock several resources per call, all or nothing, in
// one canonical order (core.Client.AcquireAll): a transfer locks
// Key(Const("acct"), Field("from")) and Key(Const("acct"), Field("to")).
func Key(parts ...Part) Option {
	return func(c *config) {
		ps := make([]guard.Part[*Call], len(parts))
		for i, p := range parts {
			ps[i] = p.p
		}
		c.rpc.Keys = append(c.rpc.Keys, ps)
	}
}

// Limit admits at most n calls of one key at once (a semaphore of n per
// key, across every replica) instead of one; past the wait budget (or at
// once with NoWait) a call is answered codes.ResourceExhausted with a
// RetryInfo detail.
//
// Limit(0) is the default, the key's mutex: the lock of an interceptor
// without Limit, answered codes.Aborted when held. Limit(1) admits one call
// at a time too, but is a semaphore, another lock that does not exclude
// that mutex's calls. The interceptor constructors panic on n < 0 or
// n > core.MaxPermits.
func Limit(n int) Option { return func(c *config) { c.rpc.Guard.Request.Limit = n } }

// OnLimited replaces the ResourceExhausted answer (Limit: every permit
// held).
func OnLimited(f Responder) Option { return on(f, guard.Limited) }

// ReadSide takes the read side of the key's read/write lock: calls of this
// interceptor share the key with each other and with other readers, and
// exclude writers. gRPC has no safe methods to tell reads by, so the choice
// is explicit: build one interceptor for the methods that only read (with
// ReadSide) and one for those that write (WriteSide), with the same key.
// Giving both to one interceptor panics.
func ReadSide() Option { return func(c *config) { c.rpc.Guard.SetSide(core.ReadSide) } }

// WriteSide takes the write side of the key's read/write lock: one call at
// a time, and no reader meanwhile.
func WriteSide() Option { return func(c *config) { c.rpc.Guard.SetSide(core.WriteSide) } }

// KeyFromRoute locks the whole route, which for gRPC is the method: one
// call of it at a time across all replicas, whatever its message says. The
// key is the full method ("/orders.v1.Orders/Reindex"), which no resource
// key built with core.JoinKey can equal. It is an explicit choice, never a
// fallback; Key and KeyFromRoute are alternatives.
func KeyFromRoute() Option {
	return func(c *config) { c.rpc.Route = true }
}

// FromFirstMessage keys a stream by its first received message (with Key's
// parts, which may then read fields, or else the message's LockKey()) instead
// of by metadata before the handler runs. The lock is taken inside the
// handler's first RecvMsg; a stream that ends (io.EOF) before any message
// takes no lock. Messages sent before that first RecvMsg are not under the
// lock. Unary calls ignore this option: their message is known up front.
func FromFirstMessage() Option { return func(c *config) { c.rpc.FirstMessage = true } }

// MaxHold bounds how long a call holds its lock (core.MaxHold): d after the
// lock was taken, the handler's context ends with cause core.ErrMaxHold and
// the lock is no longer renewed; it is released when the handler returns.
// A stream's handler waiting on its client then, in RecvMsg or SendMsg, or
// starting to later, is idle: its lock is released at once (that RecvMsg,
// and every later one, fails; that SendMsg's message still goes), so a
// stream whose client stays silent or stops reading cannot keep its key
// past d. A handler that
// failed for it is answered codes.Aborted with a retry hint; OnReleaseError
// is told. Default 0: no bound.
func MaxHold(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.MaxHold = d } }

// OnLost replaces the Aborted answer of a call whose handler failed because
// its lease ended while it ran (lost, or held for its MaxHold).
func OnLost(f Responder) Option { return on(f, guard.Lost) }

// Wait sets the wait budget: how long a call waits for a lock held by
// another before it is answered codes.Aborted (0: core.DefaultWait, 10s, as
// in core; negative: the interceptor panics). The call's own deadline still
// applies. Wait and NoWait are alternatives: giving both panics.
func Wait(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.Wait = d } }

// NoWait answers codes.Aborted at once when the lock is held.
func NoWait() Option { return func(c *config) { c.rpc.Guard.Request.NoWait = true } }

// TTL sets the lease TTL of the calls (0: the Client's; below core.MinTTL
// the interceptor panics). The lease is renewed while the handler runs; the
// TTL is how long a crashed replica keeps the lock.
func TTL(d time.Duration) Option { return func(c *config) { c.rpc.Guard.Request.TTL = d } }

// FailOpen runs the handler without the lock when Redis is unavailable
// (the Client's Observer is told through Unlocked). The default is
// fail-closed: codes.Unavailable.
func FailOpen() Option { return func(c *config) { c.rpc.Guard.Request.FailOpen = true } }

// ReleaseTimeout bounds the release after the handler returned (0: the
// Client's, core.WithReleaseTimeout, 3s by default). The release runs on a
// context detached from the call, so a client that hung up never strands
// the lock.
func ReleaseTimeout(d time.Duration) Option {
	return func(c *config) { c.rpc.Guard.ReleaseTimeout = d }
}

// AcquireOptions adds core acquire options (core.Reentrant,
// core.MaxWaiters, core.NoRenew...) to every acquire. core.Wait,
// core.NoWait, core.TTL, core.MaxHold and core.Name make the interceptor
// panic: use this package's Wait, NoWait, TTL and MaxHold (the lock's name
// is the method, as otelgrpc names it).
func AcquireOptions(opts ...core.AcquireOption) Option {
	return func(c *config) { c.rpc.Guard.AcquireOptions = append(c.rpc.Guard.AcquireOptions, opts...) }
}

// OnReleaseError is told, after the handler returned, when the lease was
// lost while the handler ran (err matches core.ErrLost) or held for its
// MaxHold (core.ErrMaxHold): its work was not protected to its end; or when
// the release failed. Default: a grpclog warning.
func OnReleaseError(f func(ctx context.Context, fullMethod string, err error)) Option {
	return func(c *config) { c.rpc.OnRelease = f }
}

// RetryAfter sets the retry hint given with codes.Aborted and
// codes.Unavailable (RetryInfo detail and grpc-retry-pushback-ms trailer).
// f gets the acquire error; the default is guard.DefaultRetryAfter (1s): the
// holder's remaining TTL is no guide, renewal keeps it near the full TTL.
func RetryAfter(f func(err error) time.Duration) Option {
	return func(c *config) { c.rpc.Guard.RetryAfter = f }
}

// Responder answers a call the lock did not let through, instead of
// Answer: it returns the error the client gets, nil for Answer's. When that
// status carries RetryInfo details, the interceptor also sets the
// grpc-retry-pushback-ms trailer from the first, so a stock gRPC client's
// retry policy honours the hint.
type Responder func(ctx context.Context, r *Rejection) error

// OnContended replaces the Aborted answer (the lock held past the wait
// budget, or NoWait).
func OnContended(f Responder) Option { return on(f, guard.Contended) }

// OnUnavailable replaces the answers of Redis unavailable (fail-closed),
// of the call's deadline passing while it waited, and of a closed Client.
func OnUnavailable(f Responder) Option { return on(f, guard.Unavailable) }

// OnBadKey replaces the InvalidArgument answer (a key part missing from
// the call).
func OnBadKey(f Responder) Option { return on(f, guard.BadKey) }

// OnMisconfigured replaces the Internal answer (the server is
// misconfigured: no key source, a field path the message lacks).
func OnMisconfigured(f Responder) Option { return on(f, guard.Misconfigured) }

// OnClientGone replaces the answer to a call cancelled while it waited.
func OnClientGone(f Responder) Option { return on(f, guard.ClientGone) }

func on(f Responder, r guard.Refusal) Option { return func(c *config) { c.rpc.Respond.On(f, r) } }

// newConfig applies opts and panics, at construction, on a configuration
// that could only fail at run time: a nil client, a bad option value, a
// stream interceptor without a key source. (The gin-contrib / grpc norm: a
// misconfigured middleware does not start.)
func newConfig(client *core.Client, opts []Option, stream bool) *config {
	c := &config{rpc: rpckey.Config[*Call]{Guard: guard.Config[*Call]{Client: client}, Stream: stream, Msg: callMsg, Procedure: callMethod,
		Respond: guard.RPCResponders{}, Wire: wire, OnRelease: logReleaseError}}
	for _, o := range opts {
		o(c)
	}
	c.rpc.Guard.Misconfigured = func(_ *Call, method string, err error) {
		grpclog.Errorf("grpclock: %s: the lock is misconfigured: every call is answered Internal: %v", method, err)
	}
	kind := "UnaryServerInterceptor"
	if stream {
		kind = "StreamServerInterceptor"
	}
	var err error
	if c.policy, err = rpckey.New(c.rpc); err != nil {
		panic("grpclock: " + kind + ": " + err.Error())
	}
	if c.idempotent {
		c.idempotency = newIdempotency(client, c.idem, stream, kind)
	}
	return c
}

func logReleaseError(_ context.Context, method string, err error) {
	grpclog.Warningf("grpclock: %s: %v", method, err)
}
