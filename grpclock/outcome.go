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

// Kind is why a call was refused (or, for Lost, ended).
type Kind uint8

// Kinds, with the code DefaultErrorHandler answers.
const (
	Contended        Kind = iota + 1 // held by another past the wait budget, or NoWait: Aborted + retry hint
	Unavailable                      // Redis unreachable, fail-closed: Unavailable + retry hint
	BadKey                           // the key cannot be taken from the call: InvalidArgument
	Misconfigured                    // no key source, bad field path, bad acquire option: Internal
	Canceled                         // the call was cancelled while waiting: Canceled
	DeadlineExceeded                 // the call's deadline passed while waiting: DeadlineExceeded
	Lost                             // the lease was lost while the handler ran and it failed: Aborted + retry hint
)

func (k Kind) String() string {
	switch k {
	case Contended:
		return "contended"
	case Unavailable:
		return "unavailable"
	case BadKey:
		return "bad_key"
	case Misconfigured:
		return "misconfigured"
	case Canceled:
		return "canceled"
	case DeadlineExceeded:
		return "deadline_exceeded"
	case Lost:
		return "lost"
	}
	return "unknown"
}

func kindOf(k adapt.Kind) Kind {
	switch k {
	case adapt.Contended:
		return Contended
	case adapt.BadKey:
		return BadKey
	case adapt.Misconfigured:
		return Misconfigured
	case adapt.ClientGone:
		return Canceled
	case adapt.Deadline:
		return DeadlineExceeded
	}
	return Unavailable
}

func keyErrKind(err error) Kind { return kindOf(adapt.KeyKind(err)) }

// Rejection describes a call the lock did not let through, for
// WithErrorHandler.
type Rejection struct {
	Kind       Kind
	FullMethod string
	Key        string // "" when the key could not be built
	// Err is the cause: the key error, the acquire error (a
	// *core.NotAcquiredError when contended, matching core.ErrUnavailable
	// when Redis is down), or for Lost the handler's error.
	Err error
	// RetryAfter is the hint of the RetryAfter function (default 1s),
	// set for Contended, Unavailable and Lost.
	RetryAfter time.Duration
}

// DefaultErrorHandler is DESIGN.md's table for gRPC:
//
//	Contended        codes.Aborted, RetryInfo detail (RetryAfter)
//	Unavailable      codes.Unavailable, RetryInfo detail (RetryAfter)
//	BadKey           codes.InvalidArgument, naming the missing part
//	Misconfigured    codes.Internal, saying what is wrong with the server
//	Canceled         status.FromContextError: codes.Canceled
//	DeadlineExceeded status.FromContextError: codes.DeadlineExceeded
//	Lost             codes.Aborted, RetryInfo detail (RetryAfter)
//
// Messages never name the holder (its metadata may be another tenant's).
// The interceptor adds the grpc-retry-pushback-ms trailer to any answer that
// carries a RetryInfo detail.
func DefaultErrorHandler(ctx context.Context, r *Rejection) error {
	switch r.Kind {
	case Contended:
		return retryable(codes.Aborted, "grpclock: the resource is locked by another call; retry later", r.RetryAfter)
	case Unavailable:
		return retryable(codes.Unavailable, "grpclock: the lock service is unavailable", r.RetryAfter)
	case BadKey:
		return status.Error(codes.InvalidArgument, errText(r.Err))
	case Misconfigured:
		return status.Error(codes.Internal, fmt.Sprintf("grpclock: lock interceptor misconfigured for %s: %s", r.FullMethod, strings.TrimPrefix(errText(r.Err), "grpclock: ")))
	case Canceled, DeadlineExceeded:
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if r.Kind == Canceled {
			return status.Error(codes.Canceled, "grpclock: call cancelled while waiting for the lock")
		}
		return status.Error(codes.DeadlineExceeded, "grpclock: deadline exceeded while waiting for the lock")
	case Lost:
		return retryable(codes.Aborted, "grpclock: the lock was lost while the call ran", r.RetryAfter)
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
	if r.Kind == Contended || r.Kind == Unavailable || r.Kind == Lost {
		r.RetryAfter = adapt.DefaultRetryAfter
		if c.retryAfter != nil {
			r.RetryAfter = c.retryAfter(r.Err)
		}
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
	return &Rejection{Kind: kindOf(g.Kind), FullMethod: method, Key: key, Err: g.Err}
}

// lostDuring reports whether a handler's failure is the lock's loss: the
// lease was lost while it ran and its error says no more than that (no
// status of its own, or codes.Canceled while the caller is still there).
// Such a call is answered Lost rather than a misleading Canceled/Unknown.
func lostDuring(g *adapt.Guard, callCtx context.Context, err error) bool {
	if err == nil || g.Lease == nil || !errors.Is(g.Lease.Err(), core.ErrLost) || callCtx.Err() != nil {
		return false
	}
	st, ok := status.FromError(err)
	return !ok || st.Code() == codes.Canceled
}
