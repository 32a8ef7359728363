package fiberlock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Idempotent returns fiber middleware that runs a request carrying an
// Idempotency-Key once: its retries get its stored answer (status,
// allow-listed headers, body, Idempotent-Replayed: true), whichever
// replica or framework they reach (guard.IdempotencyPolicy.Serve says the
// whole flow). Install it per route, before the route's lock, so that a
// replay never takes it; it works without one too:
//
//	once := fiberlock.Idempotent(client, fiberlock.IdempotencyScope(fiberlock.Header("X-Tenant")))
//	app.Post("/orders/:id/pay", once, lockOrder, pay)
//
// fasthttp holds the request's body and the answer in memory: the body's
// cap is checked on the bytes fasthttp read (its own MaxRequestBodySize
// answers 413 past that), and the answer is read from c.Response() once
// the chain returned, so nothing is sent before its record is stored. An
// error the chain returns is answered by the app's ErrorHandler inside the
// middleware, so that its answer is the one stored (or not: a 5xx is not);
// an answer fiber streams (SendStream) is not stored. Claim(c) is the claim
// and its fencing token. What the client is not told goes to
// slog.Default(). It panics on a nil client or an option value
// guard.IdempotencyConfig.Check refuses.
func Idempotent(client *core.Client, opts ...IdempotencyOption) fiber.Handler {
	p, err := guard.NewIdempotencyPolicy[fiber.Ctx](client, reader{}, opts...)
	if err != nil {
		panic("fiberlock: Idempotent: " + err.Error())
	}
	return func(c fiber.Ctx) error {
		route := c.FullPath()
		if route == "" || !p.Applies(c.Method()) {
			return c.Next() // no matched route, or a method that carries no key
		}
		return p.Serve(c.Context(), c, c.Method(), route, &idempotent{limit: p.Config().MaxAnswer, c: c})
	}
}

// Claim returns the idempotency claim the request runs under
// (core.ClaimFromContext): false when it ran without one (no key, skipped,
// fail-open) or outside its handlers. Fence the handler's writes with its
// Token: a retry that took the record over from a stalled owner has a
// larger one.
func Claim(c fiber.Ctx) (*core.Lease, bool) {
	if c == nil {
		return nil, false
	}
	return core.ClaimFromContext(c.Context())
}

// idempotent is one request through Idempotent (guard.IdempotencyExchange),
// and the answer fasthttp holds (guard.Captured).
type idempotent struct {
	limit int64
	c     fiber.Ctx
	saved fasthttp.ResponseHeader // the answer's headers before the chain ran: Discard's
}

// Body is the body as the client sent it (not decompressed): the one
// fasthttp read, or, with StreamRequestBody, read here from its stream
// under the cap (Body() would copy the whole stream first, past any
// limit) and set back for the handler.
func (e *idempotent) Body(read func(io.Reader) ([]byte, error)) ([]byte, error) {
	req := e.c.Request()
	if !req.IsBodyStream() {
		return read(bytes.NewReader(req.Body()))
	}
	b, err := read(req.BodyStream())
	if err != nil {
		return nil, err
	}
	req.SetBody(b)
	return b, nil
}

func (e *idempotent) Next() error { return e.c.Next() }

func (e *idempotent) Run(ctx context.Context) (guard.Captured, error) {
	c := e.c
	before := c.Context()
	c.Response().Header.CopyTo(&e.saved)
	done := false
	defer func() {
		c.SetContext(before)
		if !done {
			e.Discard() // a panic: what it answered is not sent
		}
	}()
	c.SetContext(ctx)
	if err := c.Next(); err != nil {
		handle := c.App().Config().ErrorHandler
		if handle == nil {
			handle = fiber.DefaultErrorHandler
		}
		if err := handle(c, err); err != nil { // answered here, so that its answer is captured
			_ = c.Status(fiber.StatusInternalServerError).SendString(http.StatusText(fiber.StatusInternalServerError))
		}
	}
	done = true
	return e, nil
}

// Response is the answer fasthttp holds.
func (e *idempotent) Response() (guard.Response, error) {
	res := e.c.Response()
	if res.IsBodyStream() {
		return guard.Response{}, fmt.Errorf("%w: fiber streams it", guard.ErrAnswerTooLarge)
	}
	body := res.Body()
	if int64(len(body)) > e.limit {
		return guard.Response{}, fmt.Errorf("%w (%d bytes)", guard.ErrAnswerTooLarge, e.limit)
	}
	hdr := http.Header{}
	for k, v := range res.Header.All() {
		hdr.Add(string(k), string(v))
	}
	return guard.Response{Status: res.StatusCode(), Header: hdr, Body: bytes.Clone(body)}, nil
}

// Commit does nothing: fasthttp sends the answer once the handlers returned.
func (e *idempotent) Commit() error { return nil }

// Discard drops the answer and the headers the chain set.
func (e *idempotent) Discard() bool {
	res := e.c.Response()
	e.saved.CopyTo(&res.Header)
	res.ResetBody()
	res.SetStatusCode(fiber.StatusOK)
	return true
}

func (e *idempotent) Replay(resp guard.Response) error {
	resp.SetHeaders(e.c)
	return e.c.Status(resp.Status).Send(resp.Body)
}

func (e *idempotent) Refuse(a guard.Answer, _ error) error { return answer(e.c, a) }

func (e *idempotent) Report(err error) {
	slog.Default().Error("fiberlock: idempotency", "route", e.c.FullPath(), "error", err)
}

// IdempotencyOption configures Idempotent: each is guard's option of the
// same name (guard.IdempotencyConfig documents the fields).
type IdempotencyOption = guard.IdempotencyOption[fiber.Ctx]

// IdempotencyHeader reads the key from header name instead of Idempotency-Key.
func IdempotencyHeader(name string) IdempotencyOption {
	return guard.IdempotencyHeader[fiber.Ctx](name)
}

// IdempotencyRequired answers 400 to a request of an idempotent method without a key.
func IdempotencyRequired() IdempotencyOption { return guard.IdempotencyRequired[fiber.Ctx]() }

// IdempotencyMethods are the methods whose requests carry a key, instead of POST and PATCH.
func IdempotencyMethods(methods ...string) IdempotencyOption {
	return guard.IdempotencyMethods[fiber.Ctx](methods...)
}

// IdempotencyScope adds parts (the tenant, the principal) to the record's
// key, so that one key never replays another tenant's answer.
func IdempotencyScope(parts ...Part) IdempotencyOption {
	ps := make([]guard.Part[fiber.Ctx], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return guard.IdempotencyScope(ps...)
}

// IdempotencyMaxBody sets the largest request body, in bytes (413 past it).
func IdempotencyMaxBody(n int64) IdempotencyOption { return guard.IdempotencyMaxBody[fiber.Ctx](n) }

// IdempotencyMaxAnswer sets the largest answer body stored, in bytes.
func IdempotencyMaxAnswer(n int64) IdempotencyOption { return guard.IdempotencyMaxAnswer[fiber.Ctx](n) }

// IdempotencyRetention sets how long a completed record is replayed.
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return guard.IdempotencyRetention[fiber.Ctx](d)
}

// IdempotencyStoreEveryAnswer stores every answer once the handler began, 5xx included.
func IdempotencyStoreEveryAnswer() IdempotencyOption {
	return guard.IdempotencyStoreEveryAnswer[fiber.Ctx]()
}

// IdempotencyReplayHeaders adds answer headers to the replayed ones.
func IdempotencyReplayHeaders(names ...string) IdempotencyOption {
	return guard.IdempotencyReplayHeaders[fiber.Ctx](names...)
}

// IdempotencyWait waits up to d for the answer of a request in progress
// elsewhere, and replays it, instead of answering 409 at once.
func IdempotencyWait(d time.Duration) IdempotencyOption { return guard.IdempotencyWait[fiber.Ctx](d) }

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL(d time.Duration) IdempotencyOption { return guard.IdempotencyTTL[fiber.Ctx](d) }

// IdempotencyMaxHold bounds how long a claim is held; its answer is then not stored.
func IdempotencyMaxHold(d time.Duration) IdempotencyOption {
	return guard.IdempotencyMaxHold[fiber.Ctx](d)
}

// IdempotencyFailOpen runs the handler without idempotency when Redis is unavailable, instead of 503.
func IdempotencyFailOpen() IdempotencyOption { return guard.IdempotencyFailOpen[fiber.Ctx]() }

// IdempotencySkipper skips idempotency for the requests f returns true for.
func IdempotencySkipper(f func(fiber.Ctx) bool) IdempotencyOption { return guard.IdempotencySkipper(f) }
