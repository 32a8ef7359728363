package grpclock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
)

// Code is the gRPC code of outcome o: the one mapping of lockkit's
// outcomes to gRPC, used by DefaultErrorHandler. OK for the outcomes that
// let the handler run.
func Code(o core.Outcome) codes.Code {
	switch o {
	case core.OutcomeAcquired, core.OutcomeUnlocked:
		return codes.OK
	case core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLost:
		return codes.Aborted
	case core.OutcomeLimited:
		return codes.ResourceExhausted
	case core.OutcomeUnavailable, core.OutcomeClosed:
		return codes.Unavailable
	case core.OutcomeBadKey:
		return codes.InvalidArgument
	case core.OutcomeCanceled:
		return codes.Canceled
	case core.OutcomeDeadline:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// retryable reports whether the outcome carries a retry hint.
func retryableOutcome(o core.Outcome) bool {
	return o.NotAcquired() || o == core.OutcomeUnavailable || o == core.OutcomeClosed || o == core.OutcomeLost
}

// Rejection describes a call the lock did not let through, for
// WithErrorHandler.
type Rejection struct {
	// Outcome is why: OutcomeContended or OutcomeTimeout (held by another),
	// OutcomeLimited (every permit of a Limit held),
	// OutcomeUnavailable, OutcomeBadKey, OutcomeMisconfigured,
	// OutcomeCanceled, OutcomeDeadline, or OutcomeLost (the lease was lost
	// while the handler ran and the handler failed for it).
	Outcome    core.Outcome
	FullMethod string
	Key        string // "" when the key could not be built
	// Err is the cause: the key error, the acquire error (a
	// *core.NotAcquiredError when contended, matching core.ErrUnavailable
	// when Redis is down), or for Lost the handler's error.
	Err error
	// RetryAfter is the hint of the RetryAfter function (default 1s),
	// set for the not-acquired outcomes, Unavailable and Lost.
	RetryAfter time.Duration
}

// DefaultErrorHandler answers with Code(r.Outcome):
//
//	OutcomeContended, OutcomeTimeout  codes.Aborted, RetryInfo detail (RetryAfter)
//	OutcomeLimited                    codes.ResourceExhausted, RetryInfo detail (Limit: every permit held)
//	OutcomeUnavailable                codes.Unavailable, RetryInfo detail (RetryAfter)
//	OutcomeClosed                     codes.Unavailable, RetryInfo detail (the Client was closed)
//	OutcomeBadKey                     codes.InvalidArgument, naming the missing part
//	OutcomeMisconfigured              codes.Internal, saying what is wrong with the server
//	OutcomeCanceled                   status.FromContextError: codes.Canceled
//	OutcomeDeadline                   status.FromContextError: codes.DeadlineExceeded
//	OutcomeLost                       codes.Aborted, RetryInfo detail (RetryAfter)
//
// Messages never name the holder (its metadata may be another tenant's).
// The interceptor adds the grpc-retry-pushback-ms trailer to any answer that
// carries a RetryInfo detail.
func DefaultErrorHandler(ctx context.Context, r *Rejection) error {
	code := Code(r.Outcome)
	switch r.Outcome {
	case core.OutcomeContended, core.OutcomeTimeout:
		return retryable(code, "grpclock: the resource is locked by another call; retry later", r.RetryAfter)
	case core.OutcomeLimited:
		return retryable(code, "grpclock: too many calls for the resource at once; retry later", r.RetryAfter)
	case core.OutcomeUnavailable:
		return retryable(code, "grpclock: the lock service is unavailable", r.RetryAfter)
	case core.OutcomeClosed:
		return retryable(code, "grpclock: the service is shutting down", r.RetryAfter)
	case core.OutcomeBadKey:
		return status.Error(code, errText(r.Err))
	case core.OutcomeMisconfigured:
		return status.Error(code, fmt.Sprintf("grpclock: lock interceptor misconfigured for %s: %s", r.FullMethod, strings.TrimPrefix(errText(r.Err), "grpclock: ")))
	case core.OutcomeCanceled, core.OutcomeDeadline:
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if r.Outcome == core.OutcomeCanceled {
			return status.Error(code, "grpclock: call cancelled while waiting for the lock")
		}
		return status.Error(code, "grpclock: deadline exceeded while waiting for the lock")
	case core.OutcomeLost:
		return retryable(code, "grpclock: the lock was lost while the call ran", r.RetryAfter)
	}
	return status.Error(codes.Internal, "grpclock: "+errText(r.Err))
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	// A Field or Func mistake arrives wrapped in core's KeyPartError, whose
	// "is unreadable: ..." reads wrong for a server error: say the cause.
	var kpe *core.KeyPartError
	if errors.Is(err, ErrMisconfigured) && errors.As(err, &kpe) && kpe.Err != nil {
		return kpe.Err.Error()
	}
	return err.Error()
}

func retryable(c codes.Code, msg string, after time.Duration) error {
	st := status.New(c, msg)
	if after < 0 {
		after = 0
	}
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)}); err == nil {
		st = d
	}
	return st.Err()
}

// PushbackTrailer is the trailer gRPC clients read as the server's retry
// pushback, in milliseconds (gRFC A6).
const PushbackTrailer = "grpc-retry-pushback-ms"

// reject answers a refused call: the error handler's status, plus the
// pushback trailer when that status carries a RetryInfo.
func (c *config) reject(ctx context.Context, setTrailer func(metadata.MD), r *Rejection) error {
	if retryableOutcome(r.Outcome) {
		r.RetryAfter = adapt.RetryHint(c.retryAfter, r.Err)
	}
	err := c.onReject(ctx, r)
	if err == nil {
		err = DefaultErrorHandler(ctx, r)
	}
	if d, ok := retryDelay(err); ok {
		setTrailer(metadata.Pairs(PushbackTrailer, strconv.FormatInt(d.Milliseconds(), 10)))
	}
	return err
}

func retryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return max(ri.GetRetryDelay().AsDuration(), 0), true
		}
	}
	return 0, false
}

// rejection describes a guard that did not let the call through.
func rejection(g *adapt.Guard, method, key string) *Rejection {
	return &Rejection{Outcome: g.Outcome, FullMethod: method, Key: key, Err: g.Err}
}

// lostDuring reports whether a handler's failure is the lock's loss: the
// lease was lost while it ran and its error says no more than that (no
// status of its own, or codes.Canceled while the caller is still there).
// Such a call is answered Lost rather than a misleading Canceled/Unknown.
func lostDuring(g *adapt.Guard, callCtx context.Context, err error) bool {
	if err == nil || !g.Lost() || callCtx.Err() != nil {
		return false
	}
	st, ok := status.FromError(err)
	return !ok || st.Code() == codes.Canceled
}
