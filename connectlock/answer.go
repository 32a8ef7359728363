package connectlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// Code is the connect code of outcome o: guard.RPCCode, the one mapping of
// lockkit's outcomes to RPC codes (grpclock's too). 0 for the outcomes that
// let the handler run.
func Code(o core.Outcome) connect.Code { return connect.Code(guard.RPCCode(o)) }

// Responder answers a call the lock did not let through, instead of
// Answer: it returns the error the client gets, nil for Answer's. When that
// *connect.Error carries RetryInfo details, the interceptor also sets the
// grpc-retry-pushback-ms metadata from the first.
type Responder func(ctx context.Context, r *Rejection) error

// Rejection describes a call the lock did not let through, for a
// Responder: its outcome, procedure, key, cause and retry hint.
type Rejection = guard.Rejection

// OnContended replaces the CodeAborted answer (the lock held past the wait
// budget, or NoWait).
func OnContended(f Responder) Option { return on(f, guard.Contended) }

// OnUnavailable replaces the answers of Redis unavailable (fail-closed),
// of the call's deadline passing while it waited, and of a closed Client.
func OnUnavailable(f Responder) Option { return on(f, guard.Unavailable) }

// OnBadKey replaces the CodeInvalidArgument answer (a key part missing from
// the call).
func OnBadKey(f Responder) Option { return on(f, guard.BadKey) }

// OnClientGone replaces the answer to a call cancelled while it waited.
func OnClientGone(f Responder) Option { return on(f, guard.ClientGone) }

// OnMisconfigured replaces the CodeInternal answer (the server is
// misconfigured: no key source, a field path the message lacks).
func OnMisconfigured(f Responder) Option { return on(f, guard.Misconfigured) }

// RetryAfter sets the retry hint given with CodeAborted, CodeResourceExhausted
// and CodeUnavailable (a RetryInfo detail and grpc-retry-pushback-ms
// metadata). f gets the acquire error; the default is
// guard.DefaultRetryAfter (1s).
func RetryAfter(f func(err error) time.Duration) Option {
	return func(c *config) { c.rpc.Guard.RetryAfter = f }
}

// Answer is the default answer to a refused call: a *connect.Error of
// Code(r.Outcome) and r.Message() (the messages grpclock answers too),
// with a RetryInfo detail where retrying later can work
// (guard.Retryable). A call whose own context ended is answered with that
// context's error. Messages never name the holder.
func Answer(ctx context.Context, r *Rejection) error {
	if r.Outcome == core.OutcomeCanceled || r.Outcome == core.OutcomeDeadline {
		if err := ctx.Err(); err != nil {
			return connect.NewError(Code(r.Outcome), err)
		}
	}
	e := connect.NewError(Code(r.Outcome), errors.New(r.Message()))
	if guard.Retryable(r.Outcome) {
		if d, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.RetryAfter)}); err == nil {
			e.AddDetail(d)
		}
	}
	return e
}

// reject answers a refused call: the On* responder's error or Answer's,
// with the pushback metadata from its first RetryInfo.
func (c *config) reject(ctx context.Context, r *Rejection) error {
	err := c.rpc.Respond.Answer(ctx, r)
	if err == nil {
		err = Answer(ctx, r)
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		for _, d := range ce.Details() {
			if v, _ := d.Value(); v != nil {
				if ri, ok := v.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
					ce.Meta().Set(guard.PushbackTrailer, strconv.FormatInt(max(ri.GetRetryDelay().AsDuration(), 0).Milliseconds(), 10))
					break // the first, as grpclock and clients reading the detail take it
				}
			}
		}
	}
	return err
}

// endedDuring reports whether a handler's failure is the lock's end: the
// lease was lost or held for its MaxHold while it ran, and its error says
// no more than that (no code of its own, or CodeCanceled while the caller
// is still there). Such a call is answered Lost.
func endedDuring(h *guard.Hold, callCtx context.Context, err error) bool {
	if err == nil || !h.Ended() || callCtx.Err() != nil {
		return false
	}
	var ce *connect.Error
	return !errors.As(err, &ce) || ce.Code() == connect.CodeCanceled
}

// result is the answer to a call whose handler returned err under h: Lost
// when it failed for the hold's end (endedDuring), else err.
func (c *config) result(ctx context.Context, procedure string, h *guard.Hold, err error) error {
	if endedDuring(h, ctx, err) {
		return c.ended(ctx, procedure, h, err)
	}
	return err
}

// ended answers a call whose handler failed for the lock's end.
func (c *config) ended(ctx context.Context, procedure string, h *guard.Hold, err error) error {
	return c.reject(ctx, rpckey.Lost(c.policy, procedure, h, err))
}

// on sets f as the answer of r's outcomes.
func on(f Responder, r guard.Refusal) Option { return func(c *config) { c.rpc.Respond.On(f, r) } }
