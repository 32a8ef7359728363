package ginlock

import (
	"context"
	"io"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Idempotent returns gin middleware that runs a request carrying an
// Idempotency-Key once: its retries get its stored answer (status,
// allow-listed headers, body, Idempotent-Replayed: true), whichever
// replica or framework they reach (guard.IdempotencyPolicy.Serve says the
// whole flow). Put it before the route's lock, so that a replay never
// takes it; it works without one too:
//
//	once := ginlock.Idempotent(client, ginlock.IdempotencyScope(ginlock.Header("X-Tenant")))
//	r.POST("/orders/:id/pay", once, lockOrder, pay)
//
// The handler's answer is held back until its record is stored; a handler
// that flushes streams from there on. Claim(c) is the claim and its
// fencing token. A request that matched no route passes through. What the
// client is not told (a completion that failed) goes to c.Error. It panics
// on a nil client or an option value guard.IdempotencyConfig.Check refuses.
func Idempotent(client *core.Client, opts ...IdempotencyOption) gin.HandlerFunc {
	p, err := guard.NewIdempotencyPolicy[*gin.Context](client, reader{}, opts...)
	if err != nil {
		panic("ginlock: Idempotent: " + err.Error())
	}
	return func(c *gin.Context) {
		route := c.FullPath()
		if route == "" || !p.Applies(c.Request.Method) {
			c.Next() // no matched route, or a method that carries no key
			return
		}
		_ = p.Serve(c.Request.Context(), c, c.Request.Method, route, &idempotent{p: p, c: c})
	}
}

// Claim returns the idempotency claim the request runs under
// (core.ClaimFromContext): false when it ran without one (no key, skipped,
// fail-open). Fence the handler's writes with its Token: a retry that took
// the record over from a stalled owner has a larger one.
func Claim(c *gin.Context) (*core.Lease, bool) {
	if c == nil || c.Request == nil {
		return nil, false
	}
	return core.ClaimFromContext(c.Request.Context())
}

// IdempotencyOption configures Idempotent: each is guard's option of the
// same name (guard.IdempotencyConfig documents the fields).
type IdempotencyOption = guard.IdempotencyOption[*gin.Context]

// IdempotencyHeader reads the key from header name instead of Idempotency-Key.
func IdempotencyHeader(name string) IdempotencyOption {
	return guard.IdempotencyHeader[*gin.Context](name)
}

// IdempotencyRequired answers 400 to a request of an idempotent method without a key.
func IdempotencyRequired() IdempotencyOption { return guard.IdempotencyRequired[*gin.Context]() }

// IdempotencyMethods are the methods whose requests carry a key, instead of POST and PATCH.
func IdempotencyMethods(methods ...string) IdempotencyOption {
	return guard.IdempotencyMethods[*gin.Context](methods...)
}

// IdempotencyScope adds parts (the tenant, the principal) to the record's
// key, so that one key never replays another tenant's answer.
func IdempotencyScope(parts ...Part) IdempotencyOption {
	ps := make([]guard.Part[*gin.Context], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return guard.IdempotencyScope(ps...)
}

// IdempotencyMaxBody sets the largest request body, in bytes (413 past it).
func IdempotencyMaxBody(n int64) IdempotencyOption { return guard.IdempotencyMaxBody[*gin.Context](n) }

// IdempotencyMaxAnswer sets the largest answer body stored, in bytes.
func IdempotencyMaxAnswer(n int64) IdempotencyOption {
	return guard.IdempotencyMaxAnswer[*gin.Context](n)
}

// IdempotencyRetention sets how long a completed record is replayed.
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return guard.IdempotencyRetention[*gin.Context](d)
}

// IdempotencyStoreEveryAnswer stores every answer once the handler began, 5xx included.
func IdempotencyStoreEveryAnswer() IdempotencyOption {
	return guard.IdempotencyStoreEveryAnswer[*gin.Context]()
}

// IdempotencyReplayHeaders adds answer headers to the replayed ones.
func IdempotencyReplayHeaders(names ...string) IdempotencyOption {
	return guard.IdempotencyReplayHeaders[*gin.Context](names...)
}

// IdempotencyWait waits up to d for the answer of a request in progress
// elsewhere, and replays it, instead of answering 409 at once.
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return guard.IdempotencyWait[*gin.Context](d)
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL(d time.Duration) IdempotencyOption { return guard.IdempotencyTTL[*gin.Context](d) }

// IdempotencyMaxHold bounds how long a claim is held; its answer is then not stored.
func IdempotencyMaxHold(d time.Duration) IdempotencyOption {
	return guard.IdempotencyMaxHold[*gin.Context](d)
}

// IdempotencyFailOpen runs the handler without idempotency when Redis is unavailable, instead of 503.
func IdempotencyFailOpen() IdempotencyOption { return guard.IdempotencyFailOpen[*gin.Context]() }

// IdempotencySkipper skips idempotency for the requests f returns true for.
func IdempotencySkipper(f func(*gin.Context) bool) IdempotencyOption {
	return guard.IdempotencySkipper(f)
}

// idempotent is one request through Idempotent (guard.IdempotencyExchange).
type idempotent struct {
	p *guard.IdempotencyPolicy[*gin.Context]
	c *gin.Context
}

func (e *idempotent) Body(read func(io.Reader) ([]byte, error)) ([]byte, error) {
	b, err := read(e.c.Request.Body)
	if err == nil {
		e.c.Request.Body = guard.NewBody(b)
	}
	return b, err
}

func (e *idempotent) Next() error {
	e.c.Next()
	return nil
}

func (e *idempotent) Run(ctx context.Context) (guard.Captured, error) {
	c := e.c
	req, w := c.Request, c.Writer
	capt := &captureWriter{ResponseWriter: w, capt: e.p.CaptureResponse(w)}
	done := false
	defer func() {
		c.Request, c.Writer = req, w
		if !done {
			capt.capt.Discard() // a panic: what it answered is not sent
		}
	}()
	c.Request, c.Writer = req.WithContext(ctx), capt
	c.Next()
	if capt.status != 0 { // a status with no body (c.Status): gin sends it after the chain
		capt.WriteHeaderNow()
	}
	done = true
	return capt.capt, nil
}

func (e *idempotent) Replay(resp guard.Response) error {
	_ = resp.Write(e.c.Writer)
	e.c.Abort()
	return nil
}

func (e *idempotent) Refuse(a guard.Answer, err error) error {
	_ = e.c.Error(err)
	e.c.Status(a.Status) // recorded; sent with the problem, if any
	a.Write(e.c.Writer)
	e.c.Abort()
	return nil
}

func (e *idempotent) Report(err error) { _ = e.c.Error(err) }

// captureWriter is gin's answer writer over a guard.ResponseCapture, which
// holds the answer back until its record is stored. As gin's own writer,
// WriteHeader only records the status: c.JSON, c.String and the other
// renderers set it before their Content-Type, so the status goes to the
// capture (which takes the headers with it) at the first write.
type captureWriter struct {
	gin.ResponseWriter
	capt   *guard.ResponseCapture
	status int // recorded by WriteHeader, not yet written
}

func (w *captureWriter) WriteHeader(code int) {
	if code > 0 && w.capt.Status() == 0 {
		w.status = code
	}
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.WriteHeaderNow()
	return w.capt.Write(p)
}

func (w *captureWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *captureWriter) Flush() {
	w.WriteHeaderNow()
	w.capt.Flush()
}

func (w *captureWriter) Written() bool { return w.capt.Status() != 0 }

// WriteHeaderNow gives the capture the status recorded, else the one gin
// records, as gin's own writer sends it.
func (w *captureWriter) WriteHeaderNow() {
	if w.capt.Status() == 0 {
		w.capt.WriteHeader(w.Status())
	}
}

// Status is the status given to the capture, else the one recorded, else
// the one gin records.
func (w *captureWriter) Status() int {
	switch {
	case w.capt.Status() != 0:
		return w.capt.Status()
	case w.status != 0:
		return w.status
	}
	return w.ResponseWriter.Status()
}
