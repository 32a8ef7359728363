package httplock

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Idempotent returns net/http middleware that runs a request carrying an
// Idempotency-Key once: its retries get its stored answer (status,
// allow-listed headers, body, Idempotent-Replayed: true), whichever
// replica or framework they reach (guard.IdempotencyPolicy.Serve says the
// whole flow). Wrap each route's handler, after the mux has routed (the
// record's key names the matched pattern; a whole mux wrapped answers
// 500), and outside the route's lock, so that a replay never takes it:
//
//	once := httplock.Idempotent(client, httplock.IdempotencyScope(httplock.Header("X-Tenant")))
//	mux.Handle("POST /orders/{id}/pay", once(lockOrder(pay)))
//
// The handler's answer is held back until its record is stored; a handler
// that flushes streams from there on. Claim(r) is the claim and its fencing
// token. What the client is not told (a completion that failed) goes to
// slog.Default(). Idempotent panics on a nil client or an option value
// guard.IdempotencyConfig.Check refuses.
func Idempotent(client *core.Client, opts ...IdempotencyOption) func(http.Handler) http.Handler {
	p, err := guard.NewIdempotencyPolicy[*http.Request](client, reader{}, opts...)
	if err != nil {
		panic("httplock: Idempotent: " + err.Error())
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !p.Applies(r.Method) { // nothing to build for a request that carries no key
				next.ServeHTTP(w, r)
				return
			}
			_ = p.Serve(r.Context(), r, r.Method, patternPath(r.Pattern), &idempotent{p: p, w: w, r: r, next: next})
		})
	}
}

// Claim returns the idempotency claim the request runs under
// (core.ClaimFromContext): false when the request ran without one (no key,
// skipped, fail-open). Fence the handler's writes with its Token: a retry
// that took the record over from a stalled owner has a larger one.
func Claim(r *http.Request) (*core.Lease, bool) {
	if r == nil {
		return nil, false
	}
	return core.ClaimFromContext(r.Context())
}

// IdempotencyOption configures Idempotent: each is guard's option of the
// same name (guard.IdempotencyConfig documents the fields).
type IdempotencyOption = guard.IdempotencyOption[*http.Request]

// IdempotencyHeader reads the key from header name instead of Idempotency-Key.
func IdempotencyHeader(name string) IdempotencyOption {
	return guard.IdempotencyHeader[*http.Request](name)
}

// IdempotencyRequired answers 400 to a request of an idempotent method without a key.
func IdempotencyRequired() IdempotencyOption { return guard.IdempotencyRequired[*http.Request]() }

// IdempotencyMethods are the methods whose requests carry a key, instead of POST and PATCH.
func IdempotencyMethods(methods ...string) IdempotencyOption {
	return guard.IdempotencyMethods[*http.Request](methods...)
}

// IdempotencyScope adds parts (the tenant, the principal) to the record's
// key, so that one key never replays another tenant's answer.
func IdempotencyScope(parts ...Part) IdempotencyOption {
	ps := make([]guard.Part[*http.Request], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return guard.IdempotencyScope(ps...)
}

// IdempotencyMaxBody sets the largest request body, in bytes (413 past it).
func IdempotencyMaxBody(n int64) IdempotencyOption { return guard.IdempotencyMaxBody[*http.Request](n) }

// IdempotencyMaxAnswer sets the largest answer body stored, in bytes.
func IdempotencyMaxAnswer(n int64) IdempotencyOption {
	return guard.IdempotencyMaxAnswer[*http.Request](n)
}

// IdempotencyRetention sets how long a completed record is replayed.
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return guard.IdempotencyRetention[*http.Request](d)
}

// IdempotencyStoreEveryAnswer stores every answer once the handler began, 5xx included.
func IdempotencyStoreEveryAnswer() IdempotencyOption {
	return guard.IdempotencyStoreEveryAnswer[*http.Request]()
}

// IdempotencyReplayHeaders adds answer headers to the replayed ones.
func IdempotencyReplayHeaders(names ...string) IdempotencyOption {
	return guard.IdempotencyReplayHeaders[*http.Request](names...)
}

// IdempotencyWait waits up to d for the answer of a request in progress
// elsewhere, and replays it, instead of answering 409 at once.
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return guard.IdempotencyWait[*http.Request](d)
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL(d time.Duration) IdempotencyOption { return guard.IdempotencyTTL[*http.Request](d) }

// IdempotencyMaxHold bounds how long a claim is held; its answer is then not stored.
func IdempotencyMaxHold(d time.Duration) IdempotencyOption {
	return guard.IdempotencyMaxHold[*http.Request](d)
}

// IdempotencyFailOpen runs the handler without idempotency when Redis is unavailable, instead of 503.
func IdempotencyFailOpen() IdempotencyOption { return guard.IdempotencyFailOpen[*http.Request]() }

// IdempotencySkipper skips idempotency for the requests f returns true for.
func IdempotencySkipper(f func(*http.Request) bool) IdempotencyOption {
	return guard.IdempotencySkipper(f)
}

// idempotent is one request through Idempotent (guard.IdempotencyExchange).
type idempotent struct {
	p    *guard.IdempotencyPolicy[*http.Request]
	w    http.ResponseWriter
	r    *http.Request
	next http.Handler
}

func (e *idempotent) Body(read func(io.Reader) ([]byte, error)) ([]byte, error) {
	b, err := read(e.r.Body)
	if err == nil {
		e.r.Body = guard.NewBody(b)
	}
	return b, err
}

func (e *idempotent) Next() error {
	e.next.ServeHTTP(e.w, e.r)
	return nil
}

func (e *idempotent) Run(ctx context.Context) (guard.Captured, error) {
	capt := e.p.CaptureResponse(e.w)
	done := false
	defer func() {
		if !done {
			capt.Discard() // a panic: what it answered is not sent
		}
	}()
	e.next.ServeHTTP(capt, e.r.WithContext(ctx))
	done = true
	return capt, nil
}

func (e *idempotent) Replay(resp guard.Response) error {
	_ = resp.Write(e.w)
	return nil
}

func (e *idempotent) Refuse(a guard.Answer, _ error) error {
	a.Write(e.w) // nothing for a client that went away
	return nil
}

func (e *idempotent) Report(err error) {
	slog.Default().Error("httplock: idempotency", "pattern", e.r.Pattern, "error", err)
}
