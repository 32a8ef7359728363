package guard

import (
	"time"

	"github.com/lockkit/lockkit/core"
)

// MiddlewareConfig is the configuration of a middleware configured, as
// echo's are, by a struct of fields whose answers return an error to the
// framework: every field of lockkit's contract, for a framework's request
// type C (echo.Context, *echo.Context, ...). An adapter of such
// a framework declares its Config as this type instantiated and builds it
// with NewMiddleware, so every such adapter has the same fields, checked
// and answered the same way. Client and one of KeyParts, KeyFunc, Keys or
// KeyFromRoute are required.
type MiddlewareConfig[C any] struct {
	// Skipper skips the middleware for a request when it returns true.
	Skipper func(c C) bool

	// Client is the lock engine.
	Client *core.Client

	// KeyParts is the key spec: comma-separated "source:name" parts, all
	// required and joined in order (ParseSpec); sources const, param,
	// header, query, cookie (its value percent-decoded once, '+' a space,
	// as on every lockkit adapter). "const:order,param:id" gives "order:42"
	// for /orders/42.
	KeyParts string
	// KeyFunc returns the whole key instead of KeyParts, used verbatim (so
	// build it with core.JoinKey when it has parts). An error or "" answers
	// 400.
	KeyFunc func(c C) (string, error)
	// Keys locks several resources per request, all or nothing: one key
	// spec each (like KeyParts), taken in one canonical order whatever the
	// order here, so two requests naming the same keys in opposite orders
	// never deadlock (core.Client.AcquireAll). It replaces KeyParts and
	// KeyFunc; a transfer sets []string{"const:acct,param:from",
	// "const:acct,param:to"}.
	Keys []string

	// KeyFromRoute locks the route template plus every path parameter
	// instead (RouteKey): identical requests run one at a time, other
	// routes or parameters do not wait for each other. It excludes the key
	// fields above.
	KeyFromRoute bool

	// Limit admits at most Limit requests of one key at once (a semaphore
	// per key, across every replica) instead of one; past the wait budget
	// (or at once with NoWait) a request is answered 429 Too Many Requests
	// with Retry-After. 0: a mutex.
	Limit int
	// ReadWrite takes a side of a read/write lock on the key instead of a
	// mutex (ParseSide): "method" (GET and HEAD read, many at once; other
	// methods write, alone), "read" or "write" (that side for every
	// request of the route); "" a mutex. Limit and ReadWrite are
	// alternatives.
	ReadWrite string

	// Wait is how long a request waits for a held lock before 409 (0:
	// core.DefaultWait, 10s, as in core; negative: invalid). The request's
	// own context still bounds it. Wait and NoWait are alternatives:
	// setting both is invalid.
	Wait time.Duration
	// NoWait answers 409 at once when the lock is held.
	NoWait bool
	// TTL is the lease TTL (0: the Client's; below core.MinTTL: invalid).
	// The lease is renewed while the handler runs; the TTL is how long a
	// crashed replica blocks others.
	TTL time.Duration
	// MaxHold bounds how long a request holds its lock (core.MaxHold): then
	// the handler's context ends with cause core.ErrMaxHold, the lock is no
	// longer renewed and is released when the handler returns, or at once
	// while the handler reads the request body or writes the answer
	// (Hold.BeginIO) (ReleaseErrorHandler is told). 0: no bound.
	MaxHold time.Duration
	// FailOpen runs the handler without the lock when Redis is unavailable
	// (the Observer's Unlocked is told). Default: fail-closed, 503.
	FailOpen bool
	// ReleaseTimeout bounds the release after the handler returned (0: the
	// Client's, core.WithReleaseTimeout, 3s by default).
	ReleaseTimeout time.Duration
	// AcquireOptions are passed to every acquire (core.Reentrant(),
	// core.MaxWaiters(n), ...). core.Wait, core.NoWait, core.TTL,
	// core.MaxHold and core.Name are invalid here: Wait, NoWait, TTL and
	// MaxHold above own them, and the name is the route template.
	AcquireOptions []core.AcquireOption

	// RetryAfter gives the Retry-After of 409, 429 and 503 answers (nil:
	// DefaultRetryAfter, 1s; rounded up to whole seconds).
	RetryAfter func(error) time.Duration
	// TokenHeader, when set, is the response header carrying the lease's
	// fencing token (Hold.Token).
	TokenHeader string

	// DenyHandler is called instead of returning the 409 when the lock is
	// held by another request past the wait budget (or NoWait), or every
	// permit of a Limit is (NotAcquiredError.Limit set; answered 429), with
	// the request's key and the core error (a *core.NotAcquiredError). What
	// it returns goes to the framework; Retry-After is already set on the
	// response.
	DenyHandler func(c C, key string, err error) error
	// ErrorHandler is called instead of returning the default answer for
	// every other outcome that stops the request, with the core error:
	// core.ErrInvalidKey (400), core.ErrUnavailable (503),
	// context.DeadlineExceeded (503), a misconfiguration (500:
	// ErrNoRouteParam, core.ErrInvalidOption, core.ErrWouldDeadlock), or
	// context.Canceled when the client went away (by default nothing is
	// returned then). What it returns goes to the framework.
	ErrorHandler func(c C, err error) error

	// ReleaseErrorHandler is told, after the handler returned, when the
	// lease was lost while the handler ran (err matches core.ErrLost: its
	// work was not protected to its end) or the release failed. The answer
	// is already written. Default: the framework's logger
	// (MiddlewareLogger.ReleaseFailed).
	ReleaseErrorHandler func(c C, err error)
}

// MiddlewareLogger is the framework's logger, as a Middleware uses it. An
// adapter implements it once (a zero-size type is enough).
type MiddlewareLogger[C any] interface {
	// Misconfigured logs the server's mistake a request found, once per
	// route (Config.Misconfigured).
	Misconfigured(c C, route string, err error)
	// ReleaseFailed logs what Hold.Release returned, when the
	// configuration has no ReleaseErrorHandler.
	ReleaseFailed(c C, err error)
}

// Middleware is a checked MiddlewareConfig: its Policy, the answers of its
// DenyHandler and ErrorHandler, and what the rest of its fields mean per
// request, written once for every middleware configured so. The adapter
// maps its framework's request and answers onto it: it tells whether the
// request matched a route (Skip), runs the handler on Hold.Ctx, and turns
// the default answer into the framework's error (Refuse). It is safe for
// concurrent use.
type Middleware[C any] struct {
	*Policy[C]
	cfg     MiddlewareConfig[C]
	respond Responders[C]
	rd      HTTPReader[C]
	log     MiddlewareLogger[C]
}

// NewMiddleware checks c and returns its Middleware, which reads requests
// with rd and logs through log. The key fields are read by ParseKeys,
// ReadWrite by ParseSide, and the rest is checked by New (Config.Check), so
// the same configuration is accepted or refused, with the same message, by
// every adapter; the errors match core.ErrInvalidOption. DenyHandler
// answers Contended and Limited, ErrorHandler every other refusal but Lost
// (Unavailable, BadKey, Misconfigured, ClientGone).
func NewMiddleware[C any](c MiddlewareConfig[C], rd HTTPReader[C], log MiddlewareLogger[C]) (*Middleware[C], error) {
	gc := Config[C]{Client: c.Client, ReleaseTimeout: c.ReleaseTimeout, AcquireOptions: c.AcquireOptions, RetryAfter: c.RetryAfter, Misconfigured: log.Misconfigured}
	gc.Request = core.Request{Wait: c.Wait, NoWait: c.NoWait, TTL: c.TTL, FailOpen: c.FailOpen, Limit: c.Limit, MaxHold: c.MaxHold}
	var err error
	if gc.Keys, err = ParseKeys(rd, c.KeyParts, c.Keys, c.KeyFunc, c.KeyFromRoute); err != nil {
		return nil, err
	}
	if gc.Request.Side, gc.SideByMethod, err = ParseSide(c.ReadWrite); err != nil {
		return nil, err
	}
	p, err := New(gc)
	if err != nil {
		return nil, err
	}
	m := &Middleware[C]{Policy: p, cfg: c, respond: Responders[C]{}, rd: rd, log: log}
	m.respond.On(KeyErrResponder(c.DenyHandler), Contended, Limited)
	m.respond.On(ErrResponder(c.ErrorHandler), Unavailable, BadKey, Misconfigured, ClientGone)
	return m, nil
}

// Skip reports whether c passes through unlocked: it matched no route of
// its own (routed false; only the framework knows), or the Skipper, the
// server's choice, skips it. Nothing the request carries exempts it: a CORS
// preflight is locked like any request (a CORS middleware in front of the
// lock answers it before it gets here).
func (m *Middleware[C]) Skip(c C, routed bool) bool {
	return !routed || (m.cfg.Skipper != nil && m.cfg.Skipper(c))
}

// SetToken sets the TokenHeader of hdr, the response's headers, to h's
// fencing token, when the field is set and a lock is held.
func (m *Middleware[C]) SetToken(hdr HeaderSetter, h *Hold) { h.SetToken(hdr, m.cfg.TokenHeader) }

// Refuse answers h, a hold of c that may not run, never writing: when the
// DenyHandler or ErrorHandler covers its outcome, it is called with
// Retry-After set on hdr (the response's headers), and custom is true and
// err what it returned. Otherwise a is the default answer, its headers
// set on hdr (Answer.SetHeaders), for the adapter to return as its
// framework's error; without a problem document (the client went away)
// there is nobody to answer, and the adapter only records a.Status.
func (m *Middleware[C]) Refuse(c C, h *Hold, hdr HeaderSetter) (a Answer, custom bool, err error) {
	a = m.Answer(h)
	if custom, err = m.respond.Respond(c, h, a, hdr); custom {
		return a, true, err
	}
	a.SetHeaders(hdr)
	return a, false, nil
}

// Released tells the ReleaseErrorHandler, or by default the framework's
// logger, err, what Hold.Release returned for c when it is not nil.
func (m *Middleware[C]) Released(c C, err error) {
	if m.cfg.ReleaseErrorHandler != nil {
		m.cfg.ReleaseErrorHandler(c, err)
		return
	}
	m.log.ReleaseFailed(c, err)
}

// Must returns what build returns, and panics on its error, prefixed by
// adapter ("echolock: ..."): the constructor of a framework whose norm is
// to panic on an invalid configuration (echo's NewWithConfig), beside the
// one that returns the error (ToMiddleware, build here).
func Must[M any](adapter string, build func() (M, error)) M {
	m, err := build()
	if err != nil {
		panic(adapter + ": " + err.Error())
	}
	return m
}
