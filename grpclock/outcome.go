package grpclock

import (
	"context"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
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
//	OutcomeMisconfigured              codes.Internal, naming the method only (the detail is logged)
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

// wire is how gRPC carries an answer: a status.
var wire = rpckey.Wire{Answer: Answer, Code: statusCode, Details: statusDetails, Error: statusError}

// statusError is a status of code and msg, with a RetryInfo detail of
// retryAfter when it is not negative (rpckey.Wire.Error).
func statusError(code guard.Code, msg string, retryAfter time.Duration) error {
	st := status.New(codes.Code(code), msg)
	if retryAfter >= 0 {
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
			st = d
		}
	}
	return st.Err()
}

// statusCode and statusDetails are how gRPC carries an answer
// (rpckey.Wire): a status.
func statusCode(err error) (guard.Code, bool) {
	st, ok := status.FromError(err)
	return guard.Code(st.Code()), ok
}

func statusDetails(err error) []any {
	if st, ok := status.FromError(err); ok {
		return st.Details()
	}
	return nil
}

// unaryPushback sets the pushback trailer of the unary call of ctx.
func unaryPushback(ctx context.Context) rpckey.Pushback {
	return func(_ error, ms string) { _ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackTrailer, ms)) }
}

// streamPushback sets the pushback trailer of stream ss.
func streamPushback(ss grpc.ServerStream) rpckey.Pushback {
	return func(_ error, ms string) { ss.SetTrailer(metadata.Pairs(PushbackTrailer, ms)) }
}
