/*
Package connectlock runs connect-go (connectrpc.com/connect) handler calls
under a lockkit distributed lock, so that the RPCs of several replicas that
touch one entity never run at once, nor at the same time as the gRPC calls
(grpclock) and HTTP requests (ginlock, echolock, httplock) on it. It is
written only against lockkit's public seam, package guard (with
guard/rpckey for protobuf messages), and passes the public conformance
suite (testing/conformance): what any adapter outside this repository can
do.

	locks, _ := core.New(rdb)
	path, handler := ordersv1connect.NewOrdersHandler(svc, connect.WithInterceptors(
		connectlock.UnaryInterceptor(locks, connectlock.Key(connectlock.Const("order"), connectlock.Field("order_id"))),
		connectlock.StreamInterceptor(locks, connectlock.FromFirstMessage(),
			connectlock.Key(connectlock.Const("order"), connectlock.Field("order_id"))),
	))

It has the options and key sources of grpclock, under the same names: Key
with Const, Metadata (a request header), Field (a message field by path),
Method and Func parts, or the message's LockKey() (rpckey.LockKeyer) by
default for unary calls; KeyFromRoute; FromFirstMessage for streams; Wait,
NoWait, TTL, MaxHold, FailOpen, ReleaseTimeout, AcquireOptions, Limit,
ReadSide, WriteSide, RetryAfter, OnReleaseError and the On* answers
(docs/adapters.md has the table of every adapter). The procedure without
its leading slash ("orders.v1.Orders/PayOrder", as otelconnect names the
server span) is the lock's telemetry name, never part of the key.

A retried call runs once with IdempotentInterceptor (or Idempotent on
UnaryInterceptor): a call carrying an Idempotency-Key header (or a field such
as AIP-155's request_id) gets the first run's stored response, of the
procedure's message type, marked "Idempotent-Replayed: true"; another message
under the key is CodeFailedPrecondition, a run in progress CodeAborted with a
retry hint. StreamInterceptor with Idempotent panics at construction.

# Outcomes

Each outcome is answered with the code guard.RPCCode gives (Code), and the
message grpclock answers with, as a *connect.Error:

	seen held past the wait budget (or NoWait)   CodeAborted + RetryInfo detail + grpc-retry-pushback-ms
	every permit of a Limit held                 CodeResourceExhausted + retry hint
	Redis unreachable, fail-closed               CodeUnavailable + retry hint
	the same, FailOpen()                         the handler runs unlocked; the Client's Observer is told
	key missing or empty                         CodeInvalidArgument
	no key source, bad field path                CodeInternal
	call ended while waiting                     CodeCanceled / CodeDeadlineExceeded
	lease ended while the handler ran, and the
	handler failed for it (lost, MaxHold)        CodeAborted + retry hint

The retry hint defaults to 1s (RetryAfter). While the handler runs its
context carries the lease (core.LeaseFromContext, for the fencing token)
and is cancelled, with context.Cause core.ErrLost or core.ErrMaxHold, when
the lease ends. The lock is released on a context detached from the call
when the handler returns or panics; a stream's handler that waits in
Receive past its MaxHold releases its lock at once.
*/
package connectlock
