package rpckey

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Wire is how an RPC framework carries an answer: all that differs between
// the answers of grpclock (a gRPC status) and connectlock (a
// *connect.Error). The rules that read it are the Policy's, written once.
type Wire struct {
	// Answer is the framework's default answer to a refused call (the
	// adapter's Answer), for outcomes without an On* responder.
	Answer func(ctx context.Context, r *guard.Rejection) error
	// Code is the RPC code err carries; false for an error that carries
	// none (a plain Go error).
	Code func(err error) (guard.Code, bool)
	// Details are the detail messages err carries (a google.rpc.Status's
	// details), in order: decoded messages, as the framework decodes them.
	Details func(err error) []any
	// Error is an answer of code with message msg, with a RetryInfo
	// detail of retryAfter when it is not negative: the answers
	// idempotency gives (Idempotency.Serve), whose words are not a
	// lock's.
	Error func(code guard.Code, msg string, retryAfter time.Duration) error
}

// Pushback sends a call's retry pushback, ms milliseconds in decimal, with
// answer, the call's error, as the guard.PushbackTrailer entry: grpclock
// sets the call's trailer, connectlock the error's metadata. It is per
// call, as a gRPC trailer is set on the call's stream.
type Pushback func(answer error, ms string)

// Refuse answers h, a hold of a call to procedure that may not run, on ctx
// (the call's own context).
func (p *Policy[R]) Refuse(ctx context.Context, procedure string, h *guard.Hold, pushback Pushback) error {
	return p.answer(ctx, p.g.Reject(h, procedure), pushback)
}

// EndedDuring reports whether err, what a handler holding h returned, is
// the lock's end: the lease was lost or held for its MaxHold while the
// handler ran, the caller is still there (callCtx, the call's own
// context), and the error says no more than that (no code of its own, or
// Canceled). Such a call is answered Lost (Ended) rather than a misleading
// Canceled or Unknown.
func (p *Policy[R]) EndedDuring(h *guard.Hold, callCtx context.Context, err error) bool {
	if err == nil || !h.Ended() || callCtx.Err() != nil {
		return false
	}
	code, ok := p.c.Wire.Code(err)
	return !ok || code == guard.CodeCanceled
}

// Ended answers a call to procedure whose handler failed with err for the
// end of its hold h (EndedDuring), or whose receive did past its MaxHold:
// OutcomeLost, its cause err joined with core.ErrMaxHold when the hold
// ended by its MaxHold.
func (p *Policy[R]) Ended(ctx context.Context, procedure string, h *guard.Hold, err error, pushback Pushback) error {
	cause := err
	if h.Overran() {
		cause = errors.Join(err, core.ErrMaxHold)
	}
	return p.answer(ctx, p.g.Rejection(core.OutcomeLost, procedure, h.Key, cause), pushback)
}

// Result is the answer to a call to procedure whose handler returned err
// under h: Ended when it failed for the hold's end (EndedDuring), else err.
func (p *Policy[R]) Result(ctx context.Context, procedure string, h *guard.Hold, err error, pushback Pushback) error {
	if p.EndedDuring(h, ctx, err) {
		return p.Ended(ctx, procedure, h, err, pushback)
	}
	return err
}

// Receive is one receive of a stream to procedure held by h
// (Hold.Receive, recv the framework's): past the hold's MaxHold it returns
// the call's answer, as to a handler that failed for it (Ended).
func (p *Policy[R]) Receive(ctx context.Context, procedure string, h *guard.Hold, recv func() error, pushback Pushback) error {
	return p.received(ctx, procedure, h.Receive(recv), func() *guard.Hold { return h }, pushback)
}

// received maps err, what a receive under a hold returned, to the call's
// answer: Ended (of the hold hold returns) when the hold ended by its
// MaxHold, else err.
func (p *Policy[R]) received(ctx context.Context, procedure string, err error, hold func() *guard.Hold, pushback Pushback) error {
	if errors.Is(err, core.ErrMaxHold) {
		return p.Ended(ctx, procedure, hold(), err, pushback)
	}
	return err
}

// answer is the answer to r: the On* responder's error, else the Wire's
// default, and the retry pushback when that error carries a retry hint.
func (p *Policy[R]) answer(ctx context.Context, r *guard.Rejection, pushback Pushback) error {
	err := p.c.Respond.Answer(ctx, r)
	if err == nil {
		err = p.c.Wire.Answer(ctx, r)
	}
	if ri := firstRetryInfo(p.c.Wire.Details(err)); ri != nil {
		pushback(err, strconv.FormatInt(max(ri.GetRetryDelay().AsDuration(), 0).Milliseconds(), 10))
	}
	return err
}

// firstRetryInfo is the first RetryInfo detail with a delay, nil when
// there is none. The first, as clients that read the detail take it
// (OpenTelemetry's OTLP exporters): the pushback must say what they read,
// and gRPC's own retry reads only the trailer, which must hold one value.
func firstRetryInfo(details []any) *errdetails.RetryInfo {
	for _, d := range details {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return ri
		}
	}
	return nil
}
