package grpclock

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// Code is the gRPC code of outcome o: guard.RPCCode, the one mapping of
// lockkit's outcomes to RPC codes (connectlock's too), used by Answer. OK
// for the outcomes that let the handler run.
func Code(o core.Outcome) codes.Code { return codes.Code(guard.RPCCode(o)) }

// Rejection describes a call the lock did not let through, for a Responder:
// its outcome, full method (Procedure), key, cause and retry hint.
type Rejection = guard.Rejection

// Answer is the default answer to a refused call: Code(r.Outcome) and
// r.Message():
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
func Answer(ctx context.Context, r *Rejection) error {
	if r.Outcome == core.OutcomeCanceled || r.Outcome == core.OutcomeDeadline {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
	}
	st := status.New(Code(r.Outcome), r.Message())
	if guard.Retryable(r.Outcome) {
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.RetryAfter)}); err == nil {
			st = d
		}
	}
	return st.Err()
}

// PushbackTrailer is the trailer gRPC clients read as the server's retry
// pushback, in milliseconds (gRFC A6).
const PushbackTrailer = guard.PushbackTrailer

// reject answers a refused call: the On* responder's status or Answer's,
// plus the pushback trailer when that status carries a RetryInfo.
func (c *config) reject(ctx context.Context, setTrailer func(metadata.MD), r *Rejection) error {
	err := c.rpc.Respond.Answer(ctx, r)
	if err == nil {
		err = Answer(ctx, r)
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

// endedDuring reports whether a handler's failure is the lock's end: the
// lease was lost or held for its MaxHold while it ran, and its error says
// no more than that (no status of its own, or codes.Canceled while the
// caller is still there). Such a call is answered Lost rather than a
// misleading Canceled/Unknown.
func endedDuring(h *guard.Hold, callCtx context.Context, err error) bool {
	if err == nil || !h.Ended() || callCtx.Err() != nil {
		return false
	}
	st, ok := status.FromError(err)
	return !ok || st.Code() == codes.Canceled
}

// ended answers a call whose handler failed for the lock's end (endedDuring):
// Lost, its cause the handler's error joined with the hold's end.
func (c *config) ended(ctx context.Context, setTrailer func(metadata.MD), method string, h *guard.Hold, err error) error {
	return c.reject(ctx, setTrailer, rpckey.Lost(c.policy, method, h, err))
}
