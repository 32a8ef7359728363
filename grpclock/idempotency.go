package grpclock

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// IdempotentUnaryServerInterceptor returns an interceptor that runs each
// unary call carrying an idempotency key once: a retry of it (a client
// that timed out, a hedged copy) gets the first run's stored response
// message, with the header metadata the allow-list replays and
// "idempotent-replayed: true", without running the handler or taking any
// lock. rpckey.Idempotency.Serve has the rule in full:
//
//	key missing (IdempotencyRequired) or invalid   codes.InvalidArgument
//	the key used for another request message       codes.FailedPrecondition
//	the key's call still running elsewhere         codes.Aborted + retry hint (IdempotencyWait: its answer)
//	Redis unavailable                              codes.Unavailable + retry hint (IdempotencyFailOpen: run)
//	the handler fails (any code)                    not stored: the retry runs again
//	the handler's claim taken over meanwhile       codes.Aborted + retry hint, nothing stored
//
// The key is read from the "idempotency-key" metadata entry, or where
// IdempotencyKey says (a Field: AIP-155's request_id). The handler runs
// under the claim, a lease: its context ends (cause core.ErrLost) when the
// claim does, and core.ClaimFromContext (core.LeaseFromContext without a
// lock inside) gives its fencing token. Chain UnaryServerInterceptor after
// it to also lock the resource (or give Idempotent to that interceptor):
// a replay then never takes the lock.
//
// It panics on a nil client or a bad option value.
func IdempotentUnaryServerInterceptor(client *core.Client, opts ...IdempotencyOption) grpc.UnaryServerInterceptor {
	return newIdempotency(client, opts, false, "IdempotentUnaryServerInterceptor").intercept
}

// Idempotent makes UnaryServerInterceptor run a call carrying an
// idempotency key once, as IdempotentUnaryServerInterceptor does, before
// it takes the lock: a replay takes no lock, and the lock's refusal is
// never stored. Given to StreamServerInterceptor it panics: a stream's
// answer is no message a record can replay.
func Idempotent(opts ...IdempotencyOption) Option {
	return func(c *config) { c.idem = append(c.idem, opts...); c.idempotent = true }
}

// IdempotencyOption configures the idempotency of unary calls.
type IdempotencyOption func(*rpckey.IdempotencyConfig[*Call])

// IdempotencyKey reads the client's key from p, a Metadata or Field part,
// instead of the "idempotency-key" metadata entry: Field("request_id") for
// AIP-155's request_id. Its value is a key by the Idempotency-Key header's
// rule: 1–255 bytes of printable ASCII (an sf-string or a bare token).
func IdempotencyKey(p Part) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Key = p.p }
}

// IdempotencyRequired answers codes.InvalidArgument to a call without a
// key; by default such a call runs as it would without idempotency.
func IdempotencyRequired() IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Required = true }
}

// IdempotencyScope adds parts (the tenant, the principal) to the record's
// key, which already holds the full method: one key sent by two tenants
// is two records, and never replays the other's answer.
func IdempotencyScope(parts ...Part) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) {
		for _, p := range parts {
			c.Scope = append(c.Scope, p.p)
		}
	}
}

// IdempotencyFingerprint identifies what a call asks for by f's bytes
// instead of its request message marshalled deterministically (the
// default, which a change of the message's schema can change). The same
// key with another fingerprint is answered codes.FailedPrecondition. An
// error of f is the server's mistake (codes.Internal).
func IdempotencyFingerprint(f func(*Call) ([]byte, error)) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Fingerprint = f }
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's): a run on a
// replica that crashed is taken over by the next retry this long after
// its last renewal.
func IdempotencyTTL(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.TTL = d }
}

// IdempotencyRetention sets how long an answer is replayed (0:
// guard.DefaultRetention, 24h).
func IdempotencyRetention(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Retention = d }
}

// IdempotencyWait makes a call whose key runs elsewhere wait up to d for
// that run's answer and replay it, instead of codes.Aborted at once: what
// gRPC hedging's copies need, since a hedged call fails on the first copy
// answered with a code its policy does not list as non-fatal.
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.Wait = d }
}

// IdempotencyFailOpen runs a call without its record when Redis is
// unavailable; the default is fail-closed, codes.Unavailable.
func IdempotencyFailOpen() IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.FailOpen = true }
}

// IdempotencyReplayMetadata adds header metadata entries to those a
// replay carries (the HTTP allow-list: content-type, location, etag,
// last-modified, content-language, link). Cookies, trace and request ids
// and hop-by-hop entries are refused (the constructor panics).
func IdempotencyReplayMetadata(names ...string) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.ReplayMetadata = append(c.ReplayMetadata, names...) }
}

// IdempotencyMaxAnswer sets the largest response message stored, in bytes
// (0: guard.DefaultMaxAnswer, 1 MiB); a larger answer is sent but not
// stored (OnNotStored is told), so its retry runs again.
func IdempotencyMaxAnswer(n int64) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.MaxAnswer = n }
}

// IdempotencyRetryAfter sets the retry hint of codes.Aborted and
// codes.Unavailable (default guard.DefaultRetryAfter, 1s).
func IdempotencyRetryAfter(f func(err error) time.Duration) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.RetryAfter = f }
}

// OnNotStored is told when a call's answer was not stored: its completion
// failed (Redis, the claim taken over) or the answer could not be encoded
// (too large). Its retry runs again. Default: a grpclog warning.
func OnNotStored(f func(ctx context.Context, fullMethod string, err error)) IdempotencyOption {
	return func(c *rpckey.IdempotencyConfig[*Call]) { c.NotStored = f }
}

// idempotency is a checked idempotency configuration on grpc-go.
type idempotency struct{ x *rpckey.Idempotency[*Call] }

func newIdempotency(client *core.Client, opts []IdempotencyOption, stream bool, kind string) *idempotency {
	c := rpckey.IdempotencyConfig[*Call]{
		Client: client, Key: rpckey.Metadata(rpckey.DefaultIdempotencyMetadata, incomingMetadata, true), Stream: stream,
		Msg: callMsg, Values: incomingMetadata, Wire: wire,
		NotStored: func(_ context.Context, method string, err error) {
			grpclog.Warningf("grpclock: %s: the answer was not stored: %v", method, err)
		},
		Misconfigured: func(_ *Call, method string, err error) {
			grpclog.Errorf("grpclock: %s: idempotency is misconfigured: every call with a key is answered Internal: %v", method, err)
		},
	}
	for _, o := range opts {
		o(&c)
	}
	x, err := rpckey.NewIdempotency(c)
	if err != nil {
		panic("grpclock: " + kind + ": " + err.Error())
	}
	return &idempotency{x}
}

// intercept runs a unary call under its record (rpckey's Serve): the
// handler's header metadata captured for the record, a replay's set.
func (i *idempotency) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var resp any
	replay, err := i.x.Serve(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod, Msg: req}, info.FullMethod, unaryPushback(ctx),
		func(ctx context.Context) (*rpckey.Answer, error) {
			hc := &headerCapture{}
			if sts := grpc.ServerTransportStreamFromContext(ctx); sts != nil {
				hc.ServerTransportStream = sts
				ctx = grpc.NewContextWithServerTransportStream(ctx, hc)
			}
			r, err := handler(ctx, req)
			if err != nil {
				return nil, err
			}
			resp = r
			m, ok := r.(proto.Message)
			if !ok {
				return nil, nil
			}
			return &rpckey.Answer{Msg: m, Header: hc.stored()}, nil
		})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		md := metadataOf(replay.Header)
		md.Set(rpckey.MetadataIdempotentReplayed, "true")
		_ = grpc.SetHeader(ctx, md)
		return replay.Msg, nil
	}
	return resp, nil
}

// headerCapture records the header metadata a handler sets or sends, for
// its record, and passes it on.
type headerCapture struct {
	grpc.ServerTransportStream
	mu sync.Mutex
	md metadata.MD
}

func (h *headerCapture) SetHeader(md metadata.MD) error {
	h.keep(md)
	return h.ServerTransportStream.SetHeader(md)
}

func (h *headerCapture) SendHeader(md metadata.MD) error {
	h.keep(md)
	return h.ServerTransportStream.SendHeader(md)
}

func (h *headerCapture) keep(md metadata.MD) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.md = metadata.Join(h.md, md)
}

// stored is the captured metadata as a record holds it: a "-bin" entry's
// bytes in base64, as they go on the wire.
func (h *headerCapture) stored() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	hdr := http.Header{}
	for k, vs := range h.md {
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
			hdr.Add(k, v)
		}
	}
	return hdr
}

// metadataOf is a record's metadata as grpc-go sends it: a "-bin" entry's
// bytes decoded.
func metadataOf(h http.Header) metadata.MD {
	md := metadata.MD{}
	for k, vs := range h {
		k = strings.ToLower(k)
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				b, err := rpckey.BinaryValue(v)
				if err != nil {
					continue
				}
				v = b
			}
			md.Append(k, v)
		}
	}
	return md
}
