/*
Package grpclock runs gRPC server calls under a lockkit distributed lock, so
that the RPCs of several replicas that touch one entity never run at once, nor
at the same time as the HTTP requests (ginlock, echolock, httplock) and
connect calls (connectlock) on it.

UnaryServerInterceptor and StreamServerInterceptor take a *core.Client and
options. The key names the resource ("order:42"); by default a unary call's
request message names it with a LockKey() method (rpckey.LockKeyer), else
Key(parts...) builds it from Const, Metadata, Field (a message field by
path), Method and Func parts, exactly as every adapter joins its parts
(core.JoinKey), so PayOrder{order_id: 42} and a gin route keyed by "order"
and :id lock the same "order:42". The method ("orders.v1.Orders/PayOrder",
as otelgrpc names the span and writes rpc.method) is only the lock's
telemetry name. A stream holds its lock for its whole life, keyed from
metadata or, with FromFirstMessage, from its first message.

The options are those of every lockkit adapter, with the same names,
defaults and validation: Wait (10s by default), NoWait, TTL, MaxHold,
FailOpen, ReleaseTimeout, AcquireOptions, Limit, ReadSide and WriteSide,
RetryAfter (1s), OnReleaseError, and an On* option per answer. Code maps
each core.Outcome to its status code (Aborted with a retry hint when the lock
is held, ResourceExhausted when every permit is, Unavailable when Redis is
not, InvalidArgument for a missing key, Internal for a misconfigured one).
While the handler runs its context carries the lease (core.LeaseFromContext,
for the fencing token) and is cancelled, with cause core.ErrLost, if the
lease is lost; the lock is released on a detached context when the handler
returns or panics.

A retried call runs once with IdempotentUnaryServerInterceptor (or Idempotent
on UnaryServerInterceptor): a call carrying an idempotency key ("idempotency-key"
metadata, or a field such as AIP-155's request_id) gets the first run's stored
response, marked "idempotent-replayed: true"; another message under the key is
FailedPrecondition, a run in progress Aborted with a retry hint. A stream
configured for it panics at construction.

Put the lock after authentication and tracing and before recovery in the
interceptor chain, and use go-grpc-middleware's selector to lock only some
methods (Example_selector). The repository's README has the contract table,
and docs/adapters.md the key sources, streams, retry hints and chain order
in full, beside the other adapters.
*/
package grpclock
