package connectlock

import (
	"context"
	"errors"
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

// wire is how connect carries an answer: a *connect.Error.
var wire = rpckey.Wire{Answer: Answer, Code: errorCode, Details: errorDetails, Error: newError}

// newError is an error of code and msg, with a RetryInfo detail of
// retryAfter when it is not negative (rpckey.Wire.Error).
func newError(code guard.Code, msg string, retryAfter time.Duration) error {
	e := connect.NewError(connect.Code(code), errors.New(msg))
	if retryAfter >= 0 {
		if d, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
			e.AddDetail(d)
		}
	}
	return e
}

// errorCode and errorDetails are how connect carries an answer
// (rpckey.Wire): a *connect.Error.
func errorCode(err error) (guard.Code, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0, false
	}
	return guard.Code(ce.Code()), true
}

func errorDetails(err error) []any {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	ds := make([]any, 0, len(ce.Details()))
	for _, d := range ce.Details() {
		if v, _ := d.Value(); v != nil {
			ds = append(ds, v)
		}
	}
	return ds
}

// setPushback sets the pushback metadata of answer, a *connect.Error
// (sent as the call's trailer, or header): every call's rpckey.Pushback.
func setPushback(answer error, ms string) {
	var ce *connect.Error
	if errors.As(answer, &ce) {
		ce.Meta().Set(guard.PushbackTrailer, ms)
	}
}

// on sets f as the answer of r's outcomes.
func on(f Responder, r guard.Refusal) Option { return func(c *config) { c.rpc.Respond.On(f, r) } }
