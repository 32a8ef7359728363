package rpckey

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// DefaultIdempotencyMetadata is the metadata entry (gRPC metadata, a
// connect request header) that carries a call's idempotency key by
// default: the HTTP header's name (guard.DefaultIdempotencyHeader),
// lower-cased as gRPC keys metadata.
const DefaultIdempotencyMetadata = "idempotency-key"

// MetadataIdempotentReplayed marks a replayed answer's header metadata
// ("idempotent-replayed: true"): the client learns that its call did not
// run again, and that the answer is the first run's.
const MetadataIdempotentReplayed = "idempotent-replayed"

// IdempotencyConfig is a unary RPC's idempotency, as an adapter's options
// set it: NewIdempotency checks it. A call carrying an idempotency key
// runs once; its retries (a client that timed out, gRPC hedging's
// copies) get the first run's stored answer.
type IdempotencyConfig[R any] struct {
	// Client keeps the records.
	Client *core.Client
	// Key is where the client's key is read: a Metadata part (the
	// default, DefaultIdempotencyMetadata, is the adapter's to give) or a
	// Field part (AIP-155's request_id), read by that source's one rule
	// (a -bin entry's bytes). Its value is an idempotency key by the HTTP
	// header's rule (guard.ParseIdempotencyKey): 1–255 bytes of printable
	// ASCII, an sf-string or a bare token. Missing when required, or
	// invalid: InvalidArgument.
	Key guard.Part[R]
	// Required answers InvalidArgument to a call without a key; otherwise
	// such a call runs as it would without idempotency.
	Required bool
	// Scope are parts (the tenant, the principal) the record's key also
	// holds, with the procedure: a key never replays another tenant's or
	// another procedure's answer.
	Scope []guard.Part[R]
	// Fingerprint says what a call asks for, when the default (its
	// request message, marshalled deterministically) will not do; nil:
	// the default. The same key with another fingerprint is answered
	// FailedPrecondition.
	Fingerprint func(R) ([]byte, error)
	// TTL is the claim's lease TTL (0: the Client's): a run whose replica
	// crashed is taken over this long after its last renewal.
	TTL time.Duration
	// Retention is how long an answer is replayed (0:
	// guard.DefaultRetention).
	Retention time.Duration
	// Wait is how long a call whose key runs elsewhere waits for that
	// run's answer and replays it (0: answered Aborted at once).
	Wait time.Duration
	// MaxHold bounds how long a run holds its claim (0: no bound).
	MaxHold time.Duration
	// FailOpen runs the call without a record when Redis is unavailable
	// (fail-closed by default: Unavailable).
	FailOpen bool
	// ReplayMetadata are header metadata entries replayed besides the
	// HTTP allow-list (content-type, location, etag, last-modified,
	// content-language, link); one that must never be replayed (cookies,
	// trace and request ids, hop-by-hop) is refused.
	ReplayMetadata []string
	// MaxAnswer is the largest response message stored, in bytes (0:
	// guard.DefaultMaxAnswer); a larger answer is not stored.
	MaxAnswer int64
	// RetryAfter is the retry hint of Aborted and Unavailable (nil:
	// guard.DefaultRetryAfter).
	RetryAfter func(error) time.Duration
	// Stream says the configuration was given to a streaming method:
	// NewIdempotency refuses it.
	Stream bool
	// Msg reads a call's request message, Values its header metadata.
	Msg    func(R) any
	Values func(r R, name string) []string
	// Wire is how the adapter's framework carries an answer.
	Wire Wire
	// NotStored is told when a run's OK answer was not stored (its
	// completion failed, or it could not be encoded): the key's next
	// retry runs again.
	NotStored func(ctx context.Context, procedure string, err error)
	// Misconfigured is told of the server's mistake a call found (a key
	// or scope part that cannot read the message), once per procedure.
	Misconfigured func(r R, procedure string, err error)
}

// Idempotency is a checked IdempotencyConfig: the rule every RPC adapter
// applies to a unary call with an idempotency key (Serve). The record's
// key, its encoding and its limits are package guard's, the ones HTTP
// adapters use, so a record means the same thing on every adapter.
type Idempotency[R any] struct {
	c     IdempotencyConfig[R]
	x     *guard.Idempotency[R]
	claim core.ClaimRequest
	once  onceLog
}

// NewIdempotency checks c and returns its Idempotency. A streaming method
// is refused: its answer is a stream, which a record cannot replay. The
// error joins every mistake and matches core.ErrInvalidOption.
func NewIdempotency[R any](c IdempotencyConfig[R]) (*Idempotency[R], error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: idempotency: %s", core.ErrInvalidOption, fmt.Sprintf(format, args...)))
	}
	if c.Stream {
		bad("a streaming method cannot be idempotent: a record replays one response message, not a stream; configure idempotency on unary methods only")
	}
	if c.Client == nil {
		bad("no core.Client")
	}
	if c.Wire.Answer == nil || c.Wire.Error == nil || c.Wire.Details == nil {
		bad("the adapter's Wire lacks Answer, Error or Details")
	}
	if c.Msg == nil || c.Values == nil {
		bad("the adapter gives no Msg or Values reader")
	}
	if c.Key.Source == "" { // the zero Part
		bad("no key source: give the adapter's Metadata or Field part")
	}
	opts := []guard.IdempotencyOption[R]{
		guard.IdempotencyScope(c.Scope...), guard.IdempotencyRetention[R](c.Retention),
		guard.IdempotencyMaxAnswer[R](c.MaxAnswer), guard.IdempotencyReplayHeaders[R](c.ReplayMetadata...),
	}
	x, err := guard.NewIdempotency[R](callReader[R]{c.Values}, opts...)
	if err != nil {
		errs = append(errs, err)
	}
	claim := core.ClaimRequest{TTL: c.TTL, Retention: c.Retention, Wait: c.Wait, MaxHold: c.MaxHold, FailOpen: c.FailOpen}
	if err := claim.Check(); err != nil {
		errs = append(errs, fmt.Errorf("idempotency: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if claim.Retention == 0 {
		claim.Retention = x.Config().Retention
	}
	return &Idempotency[R]{c: c, x: x, claim: claim}, nil
}

// callReader is an RPC call as the HTTP reader guard's idempotency
// pieces are built with: its header metadata, and its procedure as the
// route. Only the record's key and encoding are used, which read nothing
// but the scope's parts.
type callReader[R any] struct {
	values func(r R, name string) []string
}

func (c callReader[R]) Header(r R, name string) string {
	if vs := c.values(r, name); len(vs) > 0 {
		return vs[0]
	}
	return ""
}
func (c callReader[R]) HeaderValues(r R, name string) []string { return c.values(r, name) }
func (callReader[R]) Cookies(R) []string                       { return nil }
func (callReader[R]) RawQuery(R) string                        { return "" }
func (callReader[R]) Param(R, string) (string, bool)           { return "", false }
func (callReader[R]) Route(R) (string, []string)               { return "", nil }

// Answer is a unary call's answer as its record keeps it: the response
// message and the header metadata the handler set (those the allow-list
// replays are stored). Trailers are not stored.
type Answer struct {
	Msg    proto.Message
	Header http.Header
}

// rpcMethod is the method of an RPC's record key and fingerprint: none,
// so that no HTTP request's (whose method is a token) is ever the same.
const rpcMethod = ""
