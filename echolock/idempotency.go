package echolock

import (
	"context"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Idempotent returns echo middleware that runs a request carrying an
// Idempotency-Key once: its retries get its stored answer (status,
// allow-listed headers, body, Idempotent-Replayed: true), whichever
// replica or framework they reach (guard.IdempotencyPolicy.Serve says the
// whole flow). Put it before the route's lock (first in the route's
// middleware list), so that a replay never takes it; it works without one
// too:
//
//	once := echolock.Idempotent(client, echolock.IdempotencyScope("header:X-Tenant"))
//	e.POST("/orders/:id/pay", pay, once, lockOrder)
//
// The handler's answer is held back until its record is stored; a handler
// that flushes streams from there on. An error the handler returns is
// answered by the app's HTTPErrorHandler inside the middleware, so that its
// answer is the one stored (or not: a 5xx is not). The middleware's own
// answers are returned as *echo.HTTPError, problem+json, as the lock's.
// Claim(c) is the claim and its fencing token. A request that matched no
// route passes through. What the client is not told goes to c.Logger().
// It panics on a nil client or an option value
// guard.IdempotencyConfig.Check refuses. It takes options, not a Config:
// its scope is a key spec, as KeyParts is.
func Idempotent(client *core.Client, opts ...IdempotencyOption) echo.MiddlewareFunc {
	p, err := guard.NewIdempotencyPolicy[echo.Context](client, reader{}, opts...)
	if err != nil {
		panic("echolock: Idempotent: " + err.Error())
	}
	routes := &routeTable{}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			name := c.Path()
			if !p.Applies(c.Request().Method) || !routes.routed(c, name) {
				return next(c) // a method that carries no key, or no matched route
			}
			return p.Serve(c.Request().Context(), c, c.Request().Method, name, &idempotent{p: p, c: c, next: next})
		}
	}
}

// Claim returns the idempotency claim the request runs under
// (core.ClaimFromContext): false when it ran without one (no key, skipped,
// fail-open). Fence the handler's writes with its Token: a retry that took
// the record over from a stalled owner has a larger one.
func Claim(c echo.Context) (*core.Lease, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return core.ClaimFromContext(c.Request().Context())
}

// idempotent is one request through Idempotent (guard.IdempotencyExchange).
type idempotent struct {
	p    *guard.IdempotencyPolicy[echo.Context]
	c    echo.Context
	next echo.HandlerFunc
}

func (e *idempotent) Body(read func(io.Reader) ([]byte, error)) ([]byte, error) {
	req := e.c.Request()
	b, err := read(req.Body)
	if err == nil {
		req.Body = guard.NewBody(b)
	}
	return b, err
}

func (e *idempotent) Next() error { return e.next(e.c) }

func (e *idempotent) Run(ctx context.Context) (guard.Captured, error) {
	c := e.c
	req, res := c.Request(), c.Response()
	capt := e.p.CaptureResponse(res)
	done := false
	defer func() {
		c.SetRequest(req)
		c.SetResponse(res)
		if !done {
			capt.Discard() // a panic: what it answered is not sent
		}
	}()
	c.SetRequest(req.WithContext(ctx))
	c.SetResponse(echo.NewResponse(capt, c.Echo()))
	if err := e.next(c); err != nil {
		c.Error(err) // answered here, so that its answer is captured
	}
	done = true
	return capt, nil
}

func (e *idempotent) Replay(resp guard.Response) error {
	_ = resp.Write(e.c.Response())
	return nil
}

func (e *idempotent) Refuse(a guard.Answer, err error) error { return answerErr(e.c, a, err) }

func (e *idempotent) Report(err error) { e.c.Logger().Error(err) }

// IdempotencyOption configures Idempotent: each is guard's option of the
// same name (guard.IdempotencyConfig documents the fields).
type IdempotencyOption = guard.IdempotencyOption[echo.Context]

// IdempotencyHeader reads the key from header name instead of Idempotency-Key.
func IdempotencyHeader(name string) IdempotencyOption {
	return guard.IdempotencyHeader[echo.Context](name)
}

// IdempotencyRequired answers 400 to a request of an idempotent method without a key.
func IdempotencyRequired() IdempotencyOption { return guard.IdempotencyRequired[echo.Context]() }

// IdempotencyMethods are the methods whose requests carry a key, instead of POST and PATCH.
func IdempotencyMethods(methods ...string) IdempotencyOption {
	return guard.IdempotencyMethods[echo.Context](methods...)
}

// IdempotencyScope adds the parts of a key spec ("header:X-Tenant", the
// sources of KeyParts) to the record's key, so that one key never replays
// another tenant's answer. A spec that cannot be read makes Idempotent
// panic.
func IdempotencyScope(spec string) IdempotencyOption {
	return guard.IdempotencyScopeSpec[echo.Context](reader{}, spec)
}

// IdempotencyMaxBody sets the largest request body, in bytes (413 past it).
func IdempotencyMaxBody(n int64) IdempotencyOption { return guard.IdempotencyMaxBody[echo.Context](n) }

// IdempotencyMaxAnswer sets the largest answer body stored, in bytes.
func IdempotencyMaxAnswer(n int64) IdempotencyOption {
	return guard.IdempotencyMaxAnswer[echo.Context](n)
}

// IdempotencyRetention sets how long a completed record is replayed.
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return guard.IdempotencyRetention[echo.Context](d)
}

// IdempotencyStoreEveryAnswer stores every answer once the handler began, 5xx included.
func IdempotencyStoreEveryAnswer() IdempotencyOption {
	return guard.IdempotencyStoreEveryAnswer[echo.Context]()
}

// IdempotencyReplayHeaders adds answer headers to the replayed ones.
func IdempotencyReplayHeaders(names ...string) IdempotencyOption {
	return guard.IdempotencyReplayHeaders[echo.Context](names...)
}

// IdempotencyWait waits up to d for the answer of a request in progress
// elsewhere, and replays it, instead of answering 409 at once.
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return guard.IdempotencyWait[echo.Context](d)
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL(d time.Duration) IdempotencyOption { return guard.IdempotencyTTL[echo.Context](d) }

// IdempotencyMaxHold bounds how long a claim is held; its answer is then not stored.
func IdempotencyMaxHold(d time.Duration) IdempotencyOption {
	return guard.IdempotencyMaxHold[echo.Context](d)
}

// IdempotencyFailOpen runs the handler without idempotency when Redis is unavailable, instead of 503.
func IdempotencyFailOpen() IdempotencyOption { return guard.IdempotencyFailOpen[echo.Context]() }

// IdempotencySkipper skips idempotency for the requests f returns true for.
func IdempotencySkipper(f func(echo.Context) bool) IdempotencyOption {
	return guard.IdempotencySkipper(f)
}
