package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// RPCAdapter builds one replica of the suite's RPC service with one RPC
// framework and its lock interceptors: what an RPC adapter's own test
// supplies, so that the suite runs against it (RunRPC, RunRPCPair).
//
// The service has a unary method and a client-streaming one whose
// messages carry one string, the id (google.protobuf.StringValue's value
// is the natural message; its field is "value"). Serve locks each Method
// as it says, keyed by the parts Const(Method.Prefix) and the message
// field Method.Field (a stream by its first message), starts a server on a
// loopback listener stopped at t's cleanup, and returns a client of it.
type RPCAdapter struct {
	Name  string
	Serve func(t testing.TB, client *core.Client, methods ...Method) Caller
}

// Method is one RPC of the suite's service and how it is locked.
type Method struct {
	// Name names the method among the served ones.
	Name string
	// Stream makes it a client stream keyed by its first message (the
	// adapter's FromFirstMessage), else a unary call.
	Stream bool
	// Prefix and Field are the key: Key(Const(Prefix), Field(Field)), so a
	// message with id 42 locks "<Prefix>:42". Field is the message field
	// holding the id; a field the message lacks is a misconfiguration.
	Prefix, Field string
	// Metadata, when set, keys the method by that incoming metadata entry
	// instead of Field: Key(Const(Prefix), Metadata(Metadata)).
	Metadata string
	Wait     time.Duration
	NoWait   bool
	MaxHold  time.Duration
	Limit    int
	// RW, RWRead or RWWrite, takes that side of the key's read/write lock
	// (the adapter's ReadSide, WriteSide): an RPC has no safe methods, so
	// RWByMethod has no meaning here.
	RW       RW
	FailOpen bool
	// AcquireOptions are passed through the adapter's AcquireOptions
	// (core.MaxWaiters, ...).
	AcquireOptions []core.AcquireOption
	// ReleaseError, when set, is the adapter's release-error hook
	// (OnReleaseError).
	ReleaseError func(error)
	// NilResponders gives each of the adapter's On* responders a custom
	// answer and then nil: a nil responder means the default answer in
	// every adapter, so the method answers as if it had none.
	NilResponders bool
	// Handler serves a unary call: ctx is the handler's context, id the
	// message's, lease and ok what core.LeaseFromContext(ctx) returns. Its
	// error fails the call (a context error as the handler got it).
	Handler func(ctx context.Context, id string, lease *core.Lease, ok bool) error
	// StreamHandler serves a stream: recv returns the id of each message
	// received (the first one's took the lock), io.EOF at the end or the
	// error the adapter gave the receive.
	StreamHandler func(ctx context.Context, recv func() (string, error)) error
	// SendHandler, when set, makes the method a server stream keyed by its
	// one request message (the adapter's FromFirstMessage): id is the
	// message's, send sends the client a message carrying a string.
	SendHandler func(ctx context.Context, id string, send func(string) error) error
	// Idempotency, when set, makes the method idempotent: the adapter's
	// idempotency option on its lock interceptor (its idempotent
	// interceptor alone with NoLock), the key from the "idempotency-key"
	// metadata entry. On a stream the adapter must refuse it when Serve
	// builds it (a panic, as every adapter refuses a misconfiguration).
	Idempotency *RPCIdempotency
	// Answer, when set, serves a unary call instead of Handler and
	// answers a message carrying its string (Reply.Value), with the
	// header metadata "location: /answers/<string>" (replayed) and
	// "x-answer: <string>" (not replayed); claim is the idempotency
	// claim the handler runs under (nil without one).
	Answer func(ctx context.Context, id string, claim *core.Lease) (string, error)
}

// RPCIdempotency is how a Method is idempotent (the adapter's idempotency
// options).
type RPCIdempotency struct {
	// Required answers InvalidArgument to a call without a key.
	Required bool
	// Wait is the adapter's idempotency wait: a duplicate waits for the
	// running call's answer.
	Wait time.Duration
	// Scope, when set, adds that metadata entry (the tenant) to the
	// record's scope.
	Scope string
	// NoLock serves the method with idempotency alone, no lock.
	NoLock bool
}

// Caller calls the methods of one replica.
type Caller interface {
	// Call calls unary method name with a message carrying id, and md,
	// metadata name/value pairs as they go on the wire (a "-bin" entry's
	// value as base64 text: a gRPC client decodes it before sending, and
	// its library encodes it again).
	Call(ctx context.Context, name, id string, md ...string) Reply
	// Stream opens client stream name.
	Stream(ctx context.Context, name string) (ClientStream, error)
	// Watch opens server stream name with a message carrying id and reads
	// nothing of it, as a client that stopped reading; the stream ends with
	// ctx.
	Watch(ctx context.Context, name, id string) error
}

// ClientStream is an open client stream.
type ClientStream interface {
	// Send sends a message carrying id.
	Send(id string) error
	// CloseAndReceive ends the stream and returns the call's reply.
	CloseAndReceive() Reply
}

// Reply is what a client got from a call, as the protocol carried it.
type Reply struct {
	// Code is the status code (CodeOK for a success), numbered as gRPC and
	// connect number theirs.
	Code guard.Code
	// Message is the status message.
	Message string
	// RetryDelay is the RetryInfo detail's delay, when HasRetry.
	RetryDelay time.Duration
	HasRetry   bool
	// Pushback is the grpc-retry-pushback-ms trailer ("" when absent).
	Pushback string
	// Err is an error that is no status (the transport failed).
	Err error
	// Value is the response message's string (an Answer method's).
	Value string
	// Replayed is the "idempotent-replayed: true" header metadata;
	// Location and XAnswer the "location" and "x-answer" entries.
	Replayed          bool
	Location, XAnswer string
}
