/*
Package grpclock runs gRPC server calls under a lockkit distributed lock, so
that the RPCs of several replicas that touch one entity never run at once, nor
at the same time as the HTTP requests (ginlock, echolock) on it.

	client, _ := core.New(rdb)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpclock.UnaryServerInterceptor(client)),
		grpc.ChainStreamInterceptor(grpclock.StreamServerInterceptor(client,
			grpclock.Key(grpclock.Const("account"), grpclock.Metadata("x-account-id")))),
	)

# Key and name

The key names the resource ("order:42"); the method is only the lock's
telemetry name ("orders.v1.Orders/PayOrder": the full method without its
leading slash, as otelgrpc names the span and writes rpc.method, so lock and
RPC metrics join on it) and never part of the key. Every adapter joins key parts with
core.JoinKey, so a PayOrder{order_id: 42} whose message says

	func (r *PayOrderRequest) LockKey() (string, error) { return core.JoinKey("order", r.GetOrderId()) }

and a gin route POST /orders/:id/pay keyed by the parts "order" and the :id
path parameter lock the same "order:42" and exclude each other.

Key sources:
  - the message's LockKey() (rpckey.LockKeyer): the default of unary calls;
  - Key(parts...) with Const, Metadata(name), Field("order.id") (protoreflect,
    proto or JSON names, nested; strings, integers, enums), Func, Method;
  - KeyFromRoute(): one call of the method at a time (a method-wide lock is
    never a fallback, always this explicit option).

A unary call with no key source (no option, message without LockKey) or a
Field path its message does not have is the server's mistake:
codes.Internal. A missing or empty value is the caller's:
codes.InvalidArgument.

# Streams

A stream holds its lock for its whole life. Its key comes from metadata
(Key with Metadata/Const/Func parts, or KeyFromRoute), taken before the
handler runs, or with FromFirstMessage from its first received message: the
handler then starts with a context whose lease slot is still empty, the
lock is taken inside its first RecvMsg, and a stream that ends before any
message takes none. A StreamServerInterceptor without a key source panics
at construction.

# Outcomes

	seen held past the wait budget (or NoWait)   codes.Aborted + RetryInfo + grpc-retry-pushback-ms trailer
	every permit of a Limit held, the same      codes.ResourceExhausted + retry hint
	Redis unreachable or not answering
	within the wait budget, fail-closed         codes.Unavailable + retry hint
	the same, FailOpen()                        the handler runs unlocked; the Client's Observer is told
	key missing or empty                        codes.InvalidArgument
	no key source, bad field path               codes.Internal
	call ended while waiting                    status.FromContextError: Canceled / DeadlineExceeded
	lease lost, handler failed for it           codes.Aborted + retry hint

Each row is a core.Outcome (Rejection.Outcome), the taxonomy every lockkit
adapter answers by; Code is the one mapping of outcomes to gRPC codes. The
options (Wait, NoWait, TTL, ReleaseTimeout, FailOpen, AcquireOptions, and
the kind of lock: Limit, ReadSide, WriteSide, Key given more than once for
several keys) are validated exactly as in the HTTP adapters, and
OnReleaseError hears of a lease lost while the handler ran.

The retry hint defaults to 1s (RetryAfter); the pushback trailer lets a
stock gRPC client with a retry policy on ABORTED wait that long before its
next attempt. Every answer can be replaced with an On* option (OnContended,
OnLimited, OnUnavailable, OnBadKey, OnMisconfigured, OnClientGone, OnLost),
as in every lockkit adapter.

While the handler runs its context carries the lease (core.LeaseFromContext,
for the fencing token) and is cancelled, with context.Cause core.ErrLost, if
the lease is lost. The lock is released on a context detached from the call
when the handler returns or panics, so a client that hangs up never strands
it.

# Where it sits in a chain

Interceptors run in the order given to grpc.ChainUnaryInterceptor, the first
outermost. Put the lock after authentication (an unauthenticated call must
not take, or wait for, anybody's lock) and after logging/tracing (so the wait
shows in the call's span), and before recovery (so a handler panic becomes an
error inside the lock and the lock's own release still runs in order):

	grpc.ChainUnaryInterceptor(
		otelInterceptor,
		logging.UnaryServerInterceptor(logger),
		auth.UnaryServerInterceptor(authFn),
		grpclock.UnaryServerInterceptor(client),
		recovery.UnaryServerInterceptor(),
	)

The lock also releases when a panic passes through it, if recovery sits
further out.

# Per-method locks with selector

One interceptor locks every method it sees. Use go-grpc-middleware's
selector to lock only some methods, or to give methods different keys:

	payOnly := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.FullMethod() == ordersv1.Orders_PayOrder_FullMethodName
	})
	grpc.ChainUnaryInterceptor(
		selector.UnaryServerInterceptor(grpclock.UnaryServerInterceptor(client), payOnly),
	)

For streams, selector.StreamServerInterceptor does the same.
*/
package grpclock
