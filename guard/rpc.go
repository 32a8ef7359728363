package guard

import (
	"context"
	"errors"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Code is an RPC status code, numbered as gRPC's codes.Code and connect's
// connect.Code both number them (the canonical codes), so an RPC adapter
// converts it with codes.Code(c) or connect.Code(c) and the seam imports
// neither.
type Code uint32

// The codes an outcome maps to, and FailedPrecondition, the answer to an
// idempotency key reused for another request (package rpckey).
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeFailedPrecondition Code = 9
	CodeResourceExhausted  Code = 8
	CodeAborted            Code = 10
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
)

// PushbackTrailer is the trailer gRPC clients read as the server's retry
// pushback, in milliseconds (gRFC A6). RPC adapters send it with every
// answer that carries a retry hint.
const PushbackTrailer = "grpc-retry-pushback-ms"

// RPCCode is the RPC code of outcome o: the one mapping of lockkit's
// outcomes to RPC codes, used by grpclock and connectlock. CodeOK for the
// outcomes that let the handler run.
//
//	OutcomeContended, OutcomeTimeout  Aborted + retry hint
//	OutcomeLimited                    ResourceExhausted + retry hint
//	OutcomeUnavailable, OutcomeClosed Unavailable + retry hint
//	OutcomeBadKey                     InvalidArgument
//	OutcomeMisconfigured              Internal
//	OutcomeCanceled                   Canceled
//	OutcomeDeadline                   DeadlineExceeded
//	OutcomeLost                       Aborted + retry hint
func RPCCode(o core.Outcome) Code {
	switch o {
	case core.OutcomeAcquired, core.OutcomeUnlocked:
		return CodeOK
	case core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLost:
		return CodeAborted
	case core.OutcomeLimited:
		return CodeResourceExhausted
	case core.OutcomeUnavailable, core.OutcomeClosed:
		return CodeUnavailable
	case core.OutcomeBadKey:
		return CodeInvalidArgument
	case core.OutcomeCanceled:
		return CodeCanceled
	case core.OutcomeDeadline:
		return CodeDeadlineExceeded
	}
	return CodeInternal
}

// Retryable reports whether outcome o's RPC answer carries a retry hint
// (RetryInfo, the pushback trailer, Rejection.RetryAfter): where retrying
// later can work. OutcomeDeadline is not: the caller's own deadline
// passed, and its answer is DeadlineExceeded. HTTP answers go by status
// instead (AnswerFor): Retry-After on every 409, 429 and 503, so on
// OutcomeDeadline too, which HTTP answers 503.
func Retryable(o core.Outcome) bool {
	return o.NotAcquired() || o == core.OutcomeUnavailable || o == core.OutcomeClosed || o == core.OutcomeLost
}

// Rejection describes an RPC the lock did not let through, for an RPC
// adapter's answer and its On* responders.
type Rejection struct {
	// Outcome is why: OutcomeContended or OutcomeTimeout (held by another),
	// OutcomeLimited (every permit of a Limit held), OutcomeUnavailable,
	// OutcomeClosed, OutcomeBadKey, OutcomeMisconfigured, OutcomeCanceled,
	// OutcomeDeadline, or OutcomeLost (the lease ended while the handler
	// ran, lost or past its MaxHold, and the handler failed for it).
	Outcome core.Outcome
	// Procedure is the RPC's full method ("/orders.v1.Orders/PayOrder").
	Procedure string
	// Key is the lock key; "" when it could not be built.
	Key string
	// Err is the cause: the key error, the acquire error (a
	// *core.NotAcquiredError when contended, matching core.ErrUnavailable
	// when Redis is down), or for Lost the handler's error.
	Err error
	// RetryAfter is the hint of the adapter's RetryAfter option (default
	// DefaultRetryAfter), set when Retryable(Outcome).
	RetryAfter time.Duration
}

// Code is RPCCode(r.Outcome).
func (r *Rejection) Code() Code { return RPCCode(r.Outcome) }

// Message is the default answer's message, the same on every RPC
// adapter: the sentence HTTP answers say too. It never names the holder
// (its metadata may be another tenant's), nor, for a misconfiguration, the
// server's detail (a field path, a message type): the caller can do nothing
// with it, and it describes the server to whoever calls. The adapter logs
// that detail once per method (Config.Misconfigured), as HTTP adapters do.
func (r *Rejection) Message() string {
	switch r.Outcome {
	case core.OutcomeBadKey:
		return errText(r.Err)
	case core.OutcomeMisconfigured:
		return "lockkit: the lock is misconfigured for " + r.Procedure
	}
	if s := sentence(r.Outcome, r.Err, "call"); s != "" {
		return "lockkit: " + s
	}
	return "lockkit: " + errText(r.Err)
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	// A part's server-side mistake arrives wrapped in core's KeyPartError,
	// whose "is misconfigured: ..." reads wrong for a server error: say the
	// cause.
	var kpe *core.KeyPartError
	if errors.Is(err, core.ErrKeyConfig) && errors.As(err, &kpe) && kpe.Err != nil {
		return kpe.Err.Error()
	}
	return err.Error()
}

// RPCResponders are an RPC adapter's own answers to calls that may not
// run, by outcome: its On* options. Each returns the error the client gets,
// nil for the adapter's default answer.
type RPCResponders map[core.Outcome]func(ctx context.Context, r *Rejection) error

// On sets f as the answer of every outcome of refusals; a nil f restores
// their default answer, as Responders.On does.
func (rs RPCResponders) On(f func(ctx context.Context, r *Rejection) error, refusals ...Refusal) {
	on(rs, f, refusals)
}

// Answer is the answer set for r's outcome, nil when there is none or it
// returned nil.
func (rs RPCResponders) Answer(ctx context.Context, r *Rejection) error {
	if f := rs[r.Outcome]; f != nil {
		return f(ctx, r)
	}
	return nil
}
