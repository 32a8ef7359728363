package core

import (
	"context"
	"errors"
)

// Outcome is how an acquire ended, and, in the adapters, what happened to
// the request in front of the lock. It is the one taxonomy of lockkit: the
// Observer reports it, otellock records it, and every adapter maps it to
// its protocol (httplock to HTTP statuses, grpclock to gRPC codes), so the
// same failure is the same outcome everywhere.
type Outcome uint8

// Outcomes. All but Unlocked, Lost, Replayed and Mismatch can end an
// acquire; Unlocked and Lost are reported by adapters about a request;
// Replayed and Mismatch end a claim (Client.Claim), as the acquire's
// outcomes can too.
const (
	// OutcomeAcquired: the caller holds the lock.
	OutcomeAcquired Outcome = iota + 1
	// OutcomeContended: the lock was seen held at the only attempt (NoWait,
	// TryAcquire), by a local holder, or the local queue was full
	// (MaxWaiters). HTTP 409, gRPC Aborted.
	OutcomeContended
	// OutcomeTimeout: the lock was seen held and the wait budget ran out.
	// HTTP 409, gRPC Aborted.
	OutcomeTimeout
	// OutcomeCanceled: the caller's context was cancelled (the client went
	// away). HTTP: nothing written (499 recorded), gRPC Canceled.
	OutcomeCanceled
	// OutcomeDeadline: the caller's context's deadline passed. HTTP 503,
	// gRPC DeadlineExceeded.
	OutcomeDeadline
	// OutcomeUnavailable: Redis did not answer within the wait budget or
	// answered with an error. HTTP 503, gRPC Unavailable; fail-open
	// adapters run the handler (OutcomeUnlocked) on this outcome only.
	OutcomeUnavailable
	// OutcomeBadKey: the key cannot be taken from the request, the caller's
	// mistake (ErrInvalidKey). HTTP 400, gRPC InvalidArgument.
	OutcomeBadKey
	// OutcomeMisconfigured: the server's mistake (ErrKeyConfig,
	// ErrInvalidOption, ErrWouldDeadlock, ErrUnsupported). HTTP 500, gRPC Internal.
	OutcomeMisconfigured
	// OutcomeUnlocked: Redis was unavailable and a fail-open adapter ran the
	// handler without the lock.
	OutcomeUnlocked
	// OutcomeLost: the lease was lost while the handler ran.
	OutcomeLost
	// OutcomeClosed: the Client was closed (ErrClosed): the service is
	// shutting down and its locks are being released. HTTP 503, gRPC
	// Unavailable, like OutcomeUnavailable, but a fail-open adapter never
	// runs the handler: it would run beside the lock's next holder.
	OutcomeClosed
	// OutcomeLimited: every permit of a semaphore was held, at the only
	// attempt or until the wait budget ran out: the per-key concurrency
	// limit is reached. HTTP 429 with Retry-After, gRPC ResourceExhausted.
	OutcomeLimited
	// OutcomeReplayed: an idempotency record was found completed, and its
	// stored answer is the request's (Client.Claim). Not an error.
	OutcomeReplayed
	// OutcomeMismatch: the idempotency key's record was made by another
	// request (ErrFingerprint), the client's mistake. HTTP 422, gRPC
	// FailedPrecondition.
	OutcomeMismatch
)

var outcomeNames = [...]string{
	OutcomeAcquired:      "acquired",
	OutcomeContended:     "contended",
	OutcomeTimeout:       "timeout",
	OutcomeCanceled:      "canceled",
	OutcomeDeadline:      "deadline_exceeded",
	OutcomeUnavailable:   "unavailable",
	OutcomeBadKey:        "bad_key",
	OutcomeMisconfigured: "misconfigured",
	OutcomeUnlocked:      "unlocked",
	OutcomeLost:          "lost",
	OutcomeClosed:        "closed",
	OutcomeLimited:       "limited",
	OutcomeReplayed:      "replayed",
	OutcomeMismatch:      "mismatch",
}

// String is the outcome's low-cardinality name, as telemetry records it.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "unknown"
}

// NotAcquired reports whether the outcome means the lock was seen held
// (OutcomeContended, OutcomeTimeout, or OutcomeLimited for a semaphore): retrying later can work, and a
// fail-open adapter must not run the handler.
func (o Outcome) NotAcquired() bool {
	return o == OutcomeContended || o == OutcomeTimeout || o == OutcomeLimited
}

// Classify tells what an acquire error means for a caller whose context is
// ctx. Key mistakes come first; then the caller's own context decides
// Canceled or Deadline (never the error's text): as the engine saw it when
// the acquire ended, when the error is the engine's "the context ended"
// (so every Classify of one error agrees with the Observer's outcome, at
// any later moment), else ctx.Err(); then what was seen: held (Contended,
// Timeout), a misuse (Misconfigured), a closed Client (Closed), and
// everything else from Redis is Unavailable.
func Classify(ctx context.Context, err error) Outcome {
	if err == nil {
		return OutcomeAcquired
	}
	return classifyErr(ctx, err)
}

// classifyErr is Classify of a non-nil error (apart, so that the success
// path does not allocate the errors.As target).
func classifyErr(ctx context.Context, err error) Outcome {
	var na *NotAcquiredError
	var ce *ctxEndedError
	switch {
	case errors.Is(err, ErrKeyConfig):
		return OutcomeMisconfigured
	case errors.Is(err, ErrInvalidKey):
		return OutcomeBadKey
	case errors.Is(err, ErrFingerprint):
		return OutcomeMismatch
	case errors.As(err, &ce):
		if errors.Is(ce.err, context.DeadlineExceeded) {
			return OutcomeDeadline
		}
		return OutcomeCanceled
	case ctx != nil && ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return OutcomeDeadline
		}
		return OutcomeCanceled
	case errors.As(err, &na):
		if na.Limit > 0 {
			return OutcomeLimited
		}
		if na.timeout {
			return OutcomeTimeout
		}
		return OutcomeContended
	case errors.Is(err, ErrInvalidOption), errors.Is(err, ErrWouldDeadlock), errors.Is(err, ErrUnsupported):
		return OutcomeMisconfigured
	case errors.Is(err, ErrClosed):
		return OutcomeClosed
	}
	return OutcomeUnavailable
}
