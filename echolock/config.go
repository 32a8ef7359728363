package echolock

import (
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Config configures the middleware. Client and one of KeyParts, KeyFunc,
// Keys or KeyFromRoute are required.
type Config struct {
	// Skipper skips the middleware when it returns true.
	Skipper middleware.Skipper

	// Client is the lock engine.
	Client *core.Client

	// KeyParts is the key spec: comma-separated "source:name" parts, all
	// required and joined in order; sources const, param, header, query,
	// cookie (its value percent-decoded once, '+' a space, as on every
	// lockkit adapter). "const:order,param:id" gives "order:42" for /orders/42.
	KeyParts string
	// KeyFunc returns the whole key instead of KeyParts, used verbatim (so
	// build it with core.JoinKey when it has parts). An error or "" answers 400.
	KeyFunc func(c echo.Context) (string, error)
	// Keys locks several resources per request, all or nothing: one key
	// spec each (like KeyParts), taken in one canonical order whatever the
	// order here, so two requests naming the same keys in opposite orders
	// never deadlock (core.Client.AcquireAll). It replaces KeyParts and
	// KeyFunc; a transfer sets []string{"const:acct,param:from",
	// "const:acct,param:to"}.
	Keys []string

	// KeyFromRoute locks the route template plus every path parameter
	// instead: identical requests run one at a time, other routes or
	// parameters do not wait for each other. It excludes the key fields
	// above.
	KeyFromRoute bool

	// Limit admits at most Limit requests of one key at once (a semaphore
	// per key, across every replica) instead of one; past the wait budget
	// (or at once with NoWait) a request is answered 429 Too Many Requests
	// with Retry-After. 0: a mutex.
	Limit int
	// ReadWrite takes a side of a read/write lock on the key instead of a
	// mutex: "method" (GET and HEAD read, many at once; other methods
	// write, alone), "read" or "write" (that side for every request of
	// the route); "" a mutex. Limit and ReadWrite are alternatives.
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
	// longer renewed and is released when the handler returns
	// (ReleaseErrorHandler is told). 0: no bound.
	MaxHold time.Duration
	// FailOpen runs the handler without the lock when Redis is unavailable
	// (the Observer's Unlocked is told). Default: fail-closed, 503.
	FailOpen bool
	// ReleaseTimeout bounds the release after the handler returned (0: the
	// Client's, core.WithReleaseTimeout, 3s by default).
	ReleaseTimeout time.Duration
	// AcquireOptions are passed to every acquire (core.Reentrant(),
	// core.MaxWaiters(n), ...). core.Wait, core.NoWait, core.TTL and
	// core.Name are invalid here: Wait, NoWait and TTL above own them.
	AcquireOptions []core.AcquireOption

	// RetryAfter gives the Retry-After of 409 and 503 answers (nil: 1s;
	// rounded up to whole seconds).
	RetryAfter func(error) time.Duration
	// TokenHeader, when set, is the response header carrying the lease's
	// fencing token.
	TokenHeader string

	// DenyHandler is called instead of returning the 409 when the lock is
	// held by another request past the wait budget (or NoWait), or every
	// permit of a Limit is (NotAcquiredError.Limit set; answered 429), with the
	// request's key and the core error (a *core.NotAcquiredError). What it
	// returns goes to echo; Retry-After is already set on the response.
	DenyHandler func(c echo.Context, key string, err error) error
	// ErrorHandler is called instead of returning the default answer for
	// every other outcome that stops the request, with the core error:
	// core.ErrInvalidKey (400), ErrUnavailable (503), context.DeadlineExceeded
	// (503), a misconfiguration (500: ErrNoRouteParam,
	// core.ErrInvalidOption, core.ErrWouldDeadlock), or context.Canceled when
	// the client went away (by default nothing is returned then). What it
	// returns goes to echo.
	ErrorHandler func(c echo.Context, err error) error

	// ReleaseErrorHandler is told, after the handler returned, when the
	// lease was lost while the handler ran (err matches core.ErrLost: its
	// work was not protected to its end) or the release failed. The answer
	// is already written. Default: c.Logger().Error(err).
	ReleaseErrorHandler func(c echo.Context, err error)
}

// guardConfig is the configuration as package guard takes it.
func (config Config) guardConfig() (guard.Config[echo.Context], error) {
	gc := guard.Config[echo.Context]{
		Client: config.Client, ReleaseTimeout: config.ReleaseTimeout, AcquireOptions: config.AcquireOptions, RetryAfter: config.RetryAfter,
		Request: core.Request{Wait: config.Wait, NoWait: config.NoWait, TTL: config.TTL, FailOpen: config.FailOpen, Limit: config.Limit, MaxHold: config.MaxHold},
	}
	gc.Misconfigured = func(c echo.Context, route string, err error) {
		c.Logger().Errorj(map[string]any{"message": "echolock: the route's lock is misconfigured: every request is answered 500", "route": route, "error": err.Error()})
	}
	keys, err := guard.ParseKeys[echo.Context](reader{}, config.KeyParts, config.Keys, config.KeyFunc, config.KeyFromRoute)
	if err != nil {
		return gc, err
	}
	gc.Keys = keys
	gc.Request.Side, gc.SideByMethod, err = guard.ParseSide(config.ReadWrite)
	return gc, err
}

// responders are the custom answers of config's DenyHandler and ErrorHandler.
func (config Config) responders() guard.Responders[echo.Context] {
	rs := guard.Responders[echo.Context]{}
	rs.On(guard.KeyErrResponder(config.DenyHandler), guard.Contended, guard.Limited)
	rs.On(guard.ErrResponder(config.ErrorHandler), guard.Unavailable, guard.BadKey, guard.Misconfigured, guard.ClientGone)
	return rs
}
