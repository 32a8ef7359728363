package grpclock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/grpclog"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
	"github.com/lockkit/lockkit/internal/keypart"
)

// Option configures an interceptor. Each interceptor keeps its own copy of
// the configuration: there is no global state.
type Option func(*config)

type config struct {
	lock       adapt.Config
	parts      []keypart.Part[*Call]   // nil: the message's LockKey()
	more       [][]keypart.Part[*Call] // the keys of further Key options: taken together with the first
	keys       []adapt.KeyFunc[*Call]  // every key of a call (newConfig)
	keyOpt     string                  // which option set parts, for panic messages
	firstMsg   bool
	retryAfter func(error) time.Duration
	onReject   func(context.Context, *Rejection) error
	onRelease  func(ctx context.Context, fullMethod string, err error)
	bad        []string // option mistakes, reported by one panic at construction
}

// Key makes the lock key from parts, their values joined like every lockkit
// adapter joins them (core.JoinKey): Key(Const("order"), Field("order_id"))
// gives "order:42", the key ginlock and echolock build for /orders/42. It
// replaces the default of unary calls, the message's LockKey(). Give Key
// more than once to lock several resources per call, all or nothing, in
// one canonical order (core.Client.AcquireAll): a transfer locks
// Key(Const("acct"), Field("from")) and Key(Const("acct"), Field("to")).
func Key(parts ...KeyPart) Option {
	return func(c *config) {
		if len(parts) == 0 {
			c.bad = append(c.bad, "Key needs at least one part")
			return
		}
		ps := make([]keypart.Part[*Call], len(parts))
		for i, p := range parts {
			ps[i] = p.p
		}
		if c.keyOpt == "Key" { // a further key, locked together with the first
			c.more = append(c.more, ps)
			return
		}
		c.parts, c.keyOpt = ps, "Key"
	}
}

// Limit admits at most n calls of one key at once (a semaphore of n per
// key, across every replica) instead of one; past the wait budget (or at
// once with NoWait) a call is answered codes.ResourceExhausted with a
// RetryInfo detail.
func Limit(n int) Option { return func(c *config) { c.lock.Limit = n } }

// ReadSide takes the read side of the key's read/write lock: calls of this
// interceptor share the key with each other and with other readers, and
// exclude writers. gRPC has no safe methods to tell reads by, so the choice
// is explicit: build one interceptor for the methods that only read (with
// ReadSide) and one for those that write (WriteSide), with the same key.
func ReadSide() Option { return func(c *config) { c.lock.RW = adapt.RWRead } }

// WriteSide takes the write side of the key's read/write lock: one call at
// a time, and no reader meanwhile.
func WriteSide() Option { return func(c *config) { c.lock.RW = adapt.RWWrite } }

// KeyFromMethod locks the whole method: one call of it at a time across all
// replicas, whatever its message says. The key is the full method
// ("/orders.v1.Orders/Reindex"), which no resource key built with core.JoinKey
// can equal. It is an explicit choice, never a fallback.
func KeyFromMethod() Option {
	return func(c *config) { c.parts, c.keyOpt = []keypart.Part[*Call]{Method().p}, "KeyFromMethod" }
}

// FromFirstMessage keys a stream by its first received message (with Key's
// parts, which may then read fields, or else the message's LockKey()) instead
// of by metadata before the handler runs. The lock is taken inside the
// handler's first RecvMsg; a stream that ends (io.EOF) before any message
// takes no lock. Messages sent before that first RecvMsg are not under the
// lock. Unary calls ignore this option: their message is known up front.
func FromFirstMessage() Option { return func(c *config) { c.firstMsg = true } }

// Wait sets the wait budget: how long a call waits for a lock held by
// another before it is answered codes.Aborted (0: 10s; negative: the
// interceptor panics). The call's own deadline still applies. Wait and
// NoWait are alternatives: giving both panics.
func Wait(d time.Duration) Option { return func(c *config) { c.lock.Wait = d } }

// NoWait answers codes.Aborted at once when the lock is held.
func NoWait() Option { return func(c *config) { c.lock.NoWait = true } }

// TTL sets the lease TTL of the calls (0: the Client's; below core.MinTTL
// the interceptor panics). The lease is renewed while the handler runs; the
// TTL is how long a crashed replica keeps the lock.
func TTL(d time.Duration) Option { return func(c *config) { c.lock.TTL = d } }

// FailOpen runs the handler without the lock when Redis is unavailable
// (the Client's Observer is told through Unlocked). The default is
// fail-closed: codes.Unavailable.
func FailOpen() Option { return func(c *config) { c.lock.FailOpen = true } }

// ReleaseTimeout bounds the release after the handler returned (0: the
// Client's, core.WithReleaseTimeout, 3s by default). The release runs on a
// context detached from the call, so a client that hung up never strands
// the lock.
func ReleaseTimeout(d time.Duration) Option { return func(c *config) { c.lock.ReleaseTimeout = d } }

// AcquireOptions adds core acquire options (core.Reentrant,
// core.MaxWaiters, core.NoRenew...) to every acquire. core.Wait,
// core.NoWait, core.TTL and core.Name make the interceptor panic: use this
// package's Wait, NoWait and TTL (the lock's name is the method, as
// otelgrpc names it).
func AcquireOptions(opts ...core.AcquireOption) Option {
	return func(c *config) { c.lock.Options = append(c.lock.Options, opts...) }
}

// OnReleaseError is told, after the handler returned, when the lease was
// lost while the handler ran (err matches core.ErrLost: its work was not
// protected to its end) or the release failed. Default: a grpclog warning.
func OnReleaseError(f func(ctx context.Context, fullMethod string, err error)) Option {
	return func(c *config) { c.onRelease = f }
}

// RetryAfter sets the retry hint given with codes.Aborted and
// codes.Unavailable (RetryInfo detail and grpc-retry-pushback-ms trailer).
// f gets the acquire error; the default is adapt.DefaultRetryAfter (1s): the
// holder's remaining TTL is no guide, renewal keeps it near the full TTL.
func RetryAfter(f func(err error) time.Duration) Option {
	return func(c *config) { c.retryAfter = f }
}

// WithErrorHandler replaces DefaultErrorHandler: f turns a call the lock did
// not let through into the error the client gets. Returning nil falls back
// to DefaultErrorHandler (a refused call never runs its handler). When the
// returned status carries a RetryInfo detail, the interceptor also sets the
// grpc-retry-pushback-ms trailer from it, so a stock gRPC client's retry
// policy honours the hint.
func WithErrorHandler(f func(ctx context.Context, r *Rejection) error) Option {
	return func(c *config) { c.onReject = f }
}

// newConfig applies opts and panics, at construction, on a configuration
// that could only fail at run time: a nil client, a bad option value, a
// stream interceptor without a key source. (The gin-contrib / grpc norm: a
// misconfigured middleware does not start.)
func newConfig(client *core.Client, opts []Option, stream bool) *config {
	c := &config{lock: adapt.Config{Client: client}}
	for _, o := range opts {
		o(c)
	}
	if c.keyOpt == "KeyFromMethod" && len(c.more) > 0 {
		c.bad = append(c.bad, "KeyFromMethod and several Key options are alternatives")
	}
	c.keys = []adapt.KeyFunc[*Call]{c.key}
	for _, ps := range c.more {
		c.keys = append(c.keys, func(call *Call) (string, error) { return keypart.Build(call, ps) })
	}
	c.lock.Keys = len(c.keys)
	if err := c.lock.Check(); err != nil {
		c.bad = append(c.bad, err.Error())
	}
	if stream && !c.firstMsg {
		if c.parts == nil {
			c.bad = append(c.bad, "StreamServerInterceptor has no key source: give Key(...) with Metadata/Const/Func parts, KeyFromMethod(), or FromFirstMessage() to key the stream by its first message (Key's parts or its LockKey())")
		}
		for _, p := range c.parts {
			if p.Source == fieldSource {
				c.bad = append(c.bad, fmt.Sprintf("Field(%q) needs a message: on a stream add FromFirstMessage()", p.Name))
			}
		}
	}
	if len(c.bad) > 0 {
		kind := "UnaryServerInterceptor"
		if stream {
			kind = "StreamServerInterceptor"
		}
		panic("grpclock: " + kind + ": " + strings.Join(c.bad, "; "))
	}
	if c.onReject == nil {
		c.onReject = DefaultErrorHandler
	}
	if c.onRelease == nil {
		c.onRelease = logReleaseError
	}
	return c
}

// release ends a guard's hold and reports a lost lease or a failed release.
func (c *config) release(ctx context.Context, method string, g *adapt.Guard) {
	if err := g.Release(); err != nil {
		c.onRelease(ctx, method, err)
	}
}

func logReleaseError(_ context.Context, method string, err error) {
	grpclog.Warningf("grpclock: %s: %v", method, err)
}
