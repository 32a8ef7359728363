package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/lockkit/lockkit/core"
)

// IdempotencyPolicy is a route's Idempotency with the Client that keeps its
// records: the one flow every HTTP adapter's idempotency middleware runs
// (Serve), as Policy is a route's lock. It is safe for concurrent use.
type IdempotencyPolicy[R any] struct {
	*Idempotency[R]
	client *core.Client
}

// NewIdempotencyPolicy checks opts (NewIdempotency) and a non-nil client,
// and returns the policy; the errors match core.ErrInvalidOption, the
// same in every adapter.
func NewIdempotencyPolicy[R any](client *core.Client, rd HTTPReader[R], opts ...IdempotencyOption[R]) (*IdempotencyPolicy[R], error) {
	if client == nil {
		return nil, fmt.Errorf("%w: no *core.Client", core.ErrInvalidOption)
	}
	x, err := NewIdempotency(rd, opts...)
	if err != nil {
		return nil, err
	}
	return &IdempotencyPolicy[R]{Idempotency: x, client: client}, nil
}

// IdempotencyExchange is one request as an idempotency middleware serves
// it, in its framework's terms: the adapter implements it (per request,
// over its request and answer) and Serve decides what it does.
type IdempotencyExchange interface {
	// Body reads the request's body with read (ReadBody under MaxBody) and
	// puts the bytes read back for the handler (NewBody).
	Body(read func(io.Reader) ([]byte, error)) ([]byte, error)
	// Next runs the rest of the chain as without idempotency: no key was
	// sent, or Redis is down on a FailOpen route.
	Next() error
	// Run runs the rest of the chain on ctx, the claim's context (Lease.Bind
	// of the request's), with the answer captured and held back
	// (ResponseCapture), and returns it. An error the chain returns is
	// answered by the framework's error handler inside Run, so that its
	// answer is captured too. Run restores the request and the writer it
	// replaced, and discards the capture when the chain panics.
	Run(ctx context.Context) (Captured, error)
	// Replay answers with a stored answer (Response.Write, or
	// Response.SetHeaders and the framework's own send).
	Replay(resp Response) error
	// Refuse answers with the middleware's own answer a (problem+json, as
	// a lock's: Answer.Write, or the framework's error), err its cause.
	Refuse(a Answer, err error) error
	// Report tells the framework's logger what the client is not told: a
	// completion that failed, an answer that could not be stored.
	Report(err error)
}

// ErrBodyUnread is the error (400) of a request whose body could not be
// read to its end for the fingerprint.
var ErrBodyUnread = errors.New("the request body could not be read")

// ErrNoRoute is the error (500) of an idempotency middleware serving a
// request no route matched yet (net/http's: it wraps a whole mux): the
// record's key names the route, and without one two routes would share
// their keys' records.
var ErrNoRoute = fmt.Errorf("%w: idempotency on a request no route matched (wrap each route, not the whole mux)", core.ErrKeyConfig)

// Serve is one request r of method to route through the idempotency
// middleware, the one flow of every HTTP adapter:
//
//  1. a method that carries no key (Applies), a request without one on a
//     route that does not require it, or one the Skipper skips: x.Next;
//  2. the key (ClientKey): 400 when bad or missing and required;
//  3. the body read under MaxBody (413 past it);
//  4. the record's key (RecordKey, with the scope: 400, or 500 for the
//     server's mistake, as a lock key's part) and the fingerprint;
//  5. core.Client.Claim, one round trip: a completed record is replayed
//     (its status, allow-listed headers, body and Idempotent-Replayed:
//     true; no lock on the route is taken); another fingerprint is 422
//     (decided before in progress); a record in progress elsewhere is
//     409 + Retry-After (or, with Wait, its answer replayed once stored);
//     Redis down is 503 + Retry-After, or, FailOpen, x.Next unprotected
//     (core told the Observer);
//  6. claimed: the chain runs on the claim's context (ClaimFromContext,
//     its fencing token) with its answer held back; an answer Stores keeps
//     is stored (Lease.Complete, on a detached bounded context) and then
//     sent; any other (a 5xx, a lock's refusal on the route, a claim lost
//     or held for its MaxHold, an answer past MaxAnswer) is sent and the
//     claim abandoned: the next retry runs at once. A panic abandons the
//     claim and goes on up. An owner whose claim was taken over while its
//     handler ran (lost, or Complete refused) is answered 409 +
//     Retry-After instead of its answer, so that its client fetches the
//     one stored; if the handler had streamed its answer already (it
//     flushed, or the body passed MaxAnswer), the client has that answer,
//     which is not the one stored: a retry gets the stored one.
//
// The middleware's own answers (400, 409, 413, 422, 503) are never stored.
func (x *IdempotencyPolicy[R]) Serve(ctx context.Context, r R, method, route string, ex IdempotencyExchange) error {
	if !x.Applies(method) || (x.cfg.Skipper != nil && x.cfg.Skipper(r)) {
		return ex.Next()
	}
	key, ok, err := x.ClientKey(r)
	switch {
	case err != nil:
		return ex.Refuse(IdempotencyAnswer(err, 0), err)
	case !ok:
		return ex.Next()
	case route == "":
		return ex.Refuse(AnswerFor(core.OutcomeMisconfigured, ErrNoRoute, 0), ErrNoRoute)
	}
	name := route // the telemetry name, as the router writes it
	route = RouteTemplate(route)
	rkey, err := x.RecordKey(r, method, route, key)
	if err != nil {
		return ex.Refuse(AnswerFor(core.Classify(nil, err), err, 0), err)
	}
	body, err := ex.Body(x.ReadBody)
	if err != nil {
		if ctx.Err() != nil { // the client went away
			return ex.Refuse(AnswerFor(core.OutcomeCanceled, err, 0), err)
		}
		if !errors.Is(err, ErrBodyTooLarge) {
			err = fmt.Errorf("%w: %w", ErrBodyUnread, err)
		}
		return ex.Refuse(IdempotencyAnswer(err, 0), err)
	}
	req := x.cfg.claim(name)
	req.Fingerprint = x.Fingerprint(r, method, route, body)
	cl, err := x.client.Claim(ctx, rkey, req)
	switch {
	case err == nil && cl.Replayed():
		resp, derr := DecodeResponse(cl.Payload)
		if derr != nil {
			ex.Report(derr)
			return ex.Refuse(AnswerFor(core.OutcomeMisconfigured, derr, 0), derr)
		}
		return ex.Replay(resp)
	case err == nil:
		return x.run(ctx, cl.Lease, ex)
	case req.FailsOpen(ctx, err):
		return ex.Next()
	case errors.Is(err, core.ErrFingerprint):
		return ex.Refuse(IdempotencyAnswer(err, 0), err)
	case errors.Is(err, core.ErrNotAcquired):
		return ex.Refuse(IdempotencyAnswer(ErrIdempotencyInProgress, DefaultRetryAfter), err)
	}
	return ex.Refuse(AnswerFor(core.Classify(ctx, err), err, DefaultRetryAfter), err)
}

// run runs the chain under the claim l and settles it.
func (x *IdempotencyPolicy[R]) run(ctx context.Context, l *core.Lease, ex IdempotencyExchange) error {
	cctx, told := WithClaimRun(ctx)
	hctx, stop := l.Bind(cctx)
	settled := false
	defer func() {
		if !settled { // the chain panicked: abandon, and let the panic go on
			stop()
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}()
	capt, err := ex.Run(hctx)
	settled = true
	stop()
	if err != nil {
		_ = l.Release(context.WithoutCancel(ctx))
		return err
	}
	resp, rerr := capt.Response()
	refused, ended := told()
	c := Completion{Began: !refused, Status: resp.Status, Ended: ended}
	lost := errors.Is(l.Err(), core.ErrLost)
	if errors.Is(l.Err(), core.ErrMaxHold) || lost {
		c.Ended = true
	}
	var payload []byte
	if rerr == nil && x.Stores(c) {
		payload, rerr = x.EncodeResponse(resp)
	}
	if payload == nil {
		if rerr != nil {
			ex.Report(rerr)
		}
		if rel := l.Release(context.WithoutCancel(ctx)); lost || errors.Is(rel, core.ErrLost) {
			return x.takenOver(capt, ex, rel)
		}
		return capt.Commit()
	}
	switch err := l.Complete(ctx, payload); {
	case errors.Is(err, core.ErrNotHeld): // taken over, or abandoned, meanwhile
		return x.takenOver(capt, ex, err)
	case err != nil: // Redis failed, MaxHold: the answer is not stored
		ex.Report(err)
	}
	return capt.Commit()
}

// takenOver answers a request whose claim ended under its handler, err why:
// 409 + Retry-After instead of its answer, which is not the one stored;
// when that answer went out already, the client has it (Serve).
func (x *IdempotencyPolicy[R]) takenOver(capt Captured, ex IdempotencyExchange, err error) error {
	ex.Report(fmt.Errorf("%w: %w", ErrIdempotencyTakenOver, err))
	if !capt.Discard() {
		return capt.Commit()
	}
	return ex.Refuse(IdempotencyAnswer(ErrIdempotencyTakenOver, DefaultRetryAfter), err)
}

// claimRun is what a lock inside an idempotency middleware tells it of a
// request (Policy.Acquire, Hold.Release): the lock refused it, so the
// handler never began (its 409, 429 or 503 describes the attempt, and is
// not stored), or the lock ended under the handler (lost, or held for its
// MaxHold), whose work was then not protected to its end.
type claimRun struct{ refused, ended atomic.Bool }

type claimRunKey struct{}

// WithClaimRun is ctx for a handler run under an idempotency claim, and
// what a lock taken inside it (Policy.Acquire, Hold.Release) told of the
// run once it returned: refused, the lock refused the request, so the
// handler never began; ended, the lock ended under the handler (lost, or
// held for its MaxHold). Either way the answer is not stored. Serve uses
// it, and so does the RPC rule (package rpckey): one way for a lock to
// tell the claim around it.
func WithClaimRun(ctx context.Context) (context.Context, func() (refused, ended bool)) {
	cr := &claimRun{}
	return context.WithValue(ctx, claimRunKey{}, cr), func() (bool, bool) { return cr.refused.Load(), cr.ended.Load() }
}

// claimRunOf is the claimRun of an idempotency middleware around ctx's
// request, nil when there is none.
func claimRunOf(ctx context.Context) *claimRun {
	if ctx == nil {
		return nil
	}
	cr, _ := ctx.Value(claimRunKey{}).(*claimRun)
	return cr
}
