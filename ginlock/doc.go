// Package ginlock is gin middleware that runs a handler under a distributed
// lock (lockkit's core engine on Redis), so requests touching the same
// resource run one at a time across every replica and every route that
// names it:
//
//	lockOrder := ginlock.New(client, ginlock.Key(ginlock.Const("order"), ginlock.Param("id")))
//	r.POST("/orders/:id/pay", lockOrder, pay)
//	r.POST("/orders/:id/refund", lockOrder, refund) // same key "order:<id>": they exclude each other
//
// The key names the resource ("order:42", joined by core.JoinKey, so echo
// and gRPC build the same string from the same parts); the route template
// (c.FullPath()) is only the telemetry name. A request that matched no route
// passes through unlocked; every other is locked, whatever its method and
// headers: a CORS preflight too, so put the CORS middleware (gin-contrib/cors)
// in front, with r.Use, to answer preflights without the lock.
//
// The middleware waits on c.Request.Context() (Wait, default 10s, or NoWait),
// then runs the rest of the chain with c.Request's context replaced by one
// that carries the lease (Lease(c), core.LeaseFromContext) and is cancelled
// when the request ends or the lease is lost (context.Cause ErrLost); with
// gin's ContextWithFallback, c itself then behaves the same. The
// lock is released in a defer with a detached, bounded context once the
// handler has returned: a client hanging up, a panic (with gin.Recovery in
// front) or gin-contrib/timeout answering early never strand it, and the
// lock is held for as long as the handler runs.
//
// Instead of a mutex, Limit(n) admits n requests of a key at once (429 +
// Retry-After past the wait budget), ReadWrite() takes the read side of a
// read/write lock for GET and HEAD and the write side otherwise
// (ReadSide/WriteSide: one side always), and Key given more than once locks
// several resources together, all or nothing (a transfer's two accounts).
//
// Outcomes are core.Outcome, answered as package guard maps them (the
// same in every HTTP adapter): 409 + Retry-After when another request was
// seen holding the lock past the wait budget, 503 + Retry-After when Redis is unreachable
// (fail-closed; FailOpen runs the handler unlocked and tells the Observer)
// or the request's deadline passed while waiting, 400 when the key cannot be
// taken from the request, 500 when the server is misconfigured, all as
// application/problem+json; nothing is answered to a client that went away
// (499 is recorded for the access log). Every answer can be replaced with an
// On* option, and every failure is added with c.Error so gin's logger and
// otelgin see it; a route misconfigured for its lock (a Param it does not
// have) is also told once to Logger's logger.
package ginlock
