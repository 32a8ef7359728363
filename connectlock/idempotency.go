package connectlock

import (
	"context"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// IdempotentInterceptor returns an interceptor that runs each unary call
// of a handler carrying an idempotency key once: a retry of it gets the
// first run's stored response message, with the headers the allow-list
// replays and "Idempotent-Replayed: true", without running the handler or
// taking any lock (rpckey.Idempotency.Serve has the rule in full):
//
//	key missing (IdempotencyRequired) or invalid   CodeInvalidArgument
//	the key used for another request message       CodeFailedPrecondition
//	the key's call still running elsewhere         CodeAborted + retry hint (IdempotencyWait: its answer)
//	Redis unavailable                              CodeUnavailable + retry hint (IdempotencyFailOpen: run)
//	the handler fails (any code)                   not stored: the retry runs again
//	the handler's claim taken over meanwhile       CodeAborted + retry hint, nothing stored
//
// The key is read from the Idempotency-Key header, or where
// IdempotencyKey says (a Field: AIP-155's request_id). The handler runs
// under the claim, a lease: its context ends (cause core.ErrLost) when the
// claim does, and core.ClaimFromContext (core.LeaseFromContext without a
// lock inside) gives its fencing token. A replay is a response of the
// procedure's message type (found by the name the record keeps), so no
// typed hook is needed. Put UnaryInterceptor after it to also lock the
// resource (or give Idempotent to that interceptor). It lets streams and
// clients through untouched.
//
// It panics on a nil client or a bad option value.
func IdempotentInterceptor(client *core.Client, opts ...IdempotencyOption) connect.Interceptor {
	return idemInterceptor{newIdempotency(client, opts, false, "IdempotentInterceptor", slog.Default())}
}

// Idempotent makes UnaryInterceptor run a call carrying an idempotency key
// once, as IdempotentInterceptor does, before it takes the lock: a replay
// takes no lock, and the lock's refusal is never stored. Given to
// StreamInterceptor it panics: a stream's answer is no message a record
// can replay.
func Idempotent(opts ...IdempotencyOption) Option {
	return func(c *config) { c.idem = append(c.idem, opts...); c.idempotent = true }
}

// IdempotencyOption configures the idempotency of unary calls.
type IdempotencyOption func(*rpckey.IdempotencyConfig[*Call])

// IdempotencyKey reads the client's key from p, a Metadata or Field part,
// instead of the Idempotency-Key header: Field("request_id") for AIP-155's
// request_id. Its value is a key by the Idempotency-Key header's rule:
// 1–255 bytes of printable ASCII (an sf-string or a bare token).
func IdempotencyKey(p Part) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Key = p.p }
}

// IdempotencyRequired answers CodeInvalidArgument to a call without a key;
// by default such a call runs as it would without idempotency.
func IdempotencyRequired() IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Required = true }
}

// IdempotencyScope adds parts (the tenant, the principal) to the record's
// key, which already holds the procedure: one key sent by two tenants is
// two records.
func IdempotencyScope(parts ...Part) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) {
		for _, p := range parts {
			c.Scope = append(c.Scope, p.p)
		}
	}
}

// IdempotencyFingerprint identifies what a call asks for by f's bytes
// instead of its request message marshalled deterministically (the
// default, which a change of the message's schema can change).
func IdempotencyFingerprint(f func(*Call) ([]byte, error)) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Fingerprint = f }
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.TTL = d }
}

// IdempotencyRetention sets how long an answer is replayed (0: 24h).
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Retention = d }
}

// IdempotencyWait makes a call whose key runs elsewhere wait up to d for
// that run's answer and replay it, instead of CodeAborted at once.
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Wait = d }
}

// IdempotencyFailOpen runs a call without its record when Redis is
// unavailable; the default is fail-closed, CodeUnavailable.
func IdempotencyFailOpen() IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.FailOpen = true }
}

// IdempotencyReplayMetadata adds response headers to those a replay
// carries (the HTTP allow-list); cookies, trace and request ids and
// hop-by-hop headers are refused (the constructor panics).
func IdempotencyReplayMetadata(names ...string) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.ReplayMetadata = append(c.ReplayMetadata, names...) }
}

// IdempotencyMaxAnswer sets the largest response message stored, in bytes
// (0: 1 MiB); a larger answer is sent but not stored.
func IdempotencyMaxAnswer(n int64) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.MaxAnswer = n }
}

// IdempotencyRetryAfter sets the retry hint of CodeAborted and
// CodeUnavailable (default 1s).
func IdempotencyRetryAfter(f func(err error) time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.RetryAfter = f }
}

// OnNotStored is told when a call's answer was not stored (its completion
// failed, or it could not be encoded): its retry runs again. Default: the
// Logger's logger (IdempotentInterceptor: slog.Default()), at level Warn.
func OnNotStored(f func(ctx context.Context, procedure string, err error)) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.NotStored = f }
}

// idempotency is a checked idempotency configuration on connect-go.
type idempotency struct{ x *rpckey.Idempotency[*Call] }

func newIdempotency(client *core.Client, opts []IdempotencyOption, stream bool, kind string, logger *slog.Logger) *idempotency {
	c := rpckey.IdempotencyConfig[*Call]{
		Client: client, Key: rpckey.Metadata(rpckey.DefaultIdempotencyMetadata, requestHeader, false), Stream: stream,
		Msg: callMsg, Values: requestHeader, Wire: wire,
		NotStored: func(ctx context.Context, procedure string, err error) {
			logger.WarnContext(ctx, "connectlock: the answer was not stored", "procedure", procedure, "error", err)
		},
		Misconfigured: func(call *Call, procedure string, err error) {
			logger.ErrorContext(call.Ctx, "connectlock: idempotency is misconfigured: every call with a key is answered internal", "procedure", procedure, "error", err)
		},
	}
	for _, o := range opts {
		o(&c)
	}
	x, err := rpckey.NewIdempotency(c)
	if err != nil {
		panic("connectlock: " + kind + ": " + err.Error())
	}
	return &idempotency{x}
}

type idemInterceptor struct{ i *idempotency }

func (ii idemInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		return ii.i.intercept(ctx, req, next)
	}
}

func (idemInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (idemInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// intercept runs a unary call under its record (rpckey's Serve): the
// handler's response headers captured for the record, a replay's set.
func (i *idempotency) intercept(ctx context.Context, req connect.AnyRequest, next connect.UnaryFunc) (connect.AnyResponse, error) {
	proc := req.Spec().Procedure
	var res connect.AnyResponse
	replay, err := i.x.Serve(ctx, &Call{Ctx: ctx, Procedure: proc, Header: req.Header(), Msg: req.Any()}, proc, setPushback,
		func(ctx context.Context) (*rpckey.Answer, error) {
			r, err := next(ctx, req)
			if err != nil {
				return nil, err
			}
			res = r
			m, ok := r.Any().(proto.Message)
			if !ok {
				return nil, nil
			}
			hdr := r.Header().Clone()
			if ci, ok := connect.CallInfoForHandlerContext(ctx); ok { // headers set through the context
				for k, vs := range ci.ResponseHeader() {
					hdr[k] = append(hdr[k], vs...)
				}
			}
			return &rpckey.Answer{Msg: m, Header: hdr}, nil
		})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		return replayed(replay), nil
	}
	return res, nil
}

// replayResponse is a replay as connect sends it: the stored message of
// the procedure's response type, which connect's handler marshals as any
// response's (AnyResponse.Any). It embeds a Response for the rest of
// AnyResponse, whose method set a package outside connect cannot write.
type replayResponse struct {
	*connect.Response[emptypb.Empty]
	msg proto.Message
}

func (r replayResponse) Any() any { return r.msg }

func replayed(a *rpckey.Answer) connect.AnyResponse {
	r := replayResponse{Response: connect.NewResponse(&emptypb.Empty{}), msg: a.Msg}
	for k, vs := range a.Header {
		for _, v := range vs {
			r.Header().Add(k, v)
		}
	}
	r.Header().Set(rpckey.MetadataIdempotentReplayed, "true")
	return r
}
