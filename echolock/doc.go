// Package echolock is echo (v4) middleware that runs a handler under a
// distributed lock (lockkit's core engine on Redis), so requests touching
// the same resource run one at a time across every replica and every route
// that names it:
//
//	lockOrder := echolock.New(client, "const:order,param:id")
//	e.POST("/orders/:id/pay", pay, lockOrder)
//	e.POST("/orders/:id/refund", refund, lockOrder) // same key "order:<id>"
//
// KeyParts lists the parts of the key, every one required and all joined
// in order by core.JoinKey (not echo's first-found KeyLookup): sources
// const, param, header, query and cookie. "const:order,param:id" gives
// exactly "order:42", the key gin and gRPC build from the same parts.
// KeyFunc returns a whole key instead (used verbatim). The route template
// (c.Path()) is only the telemetry name; a request that matched no route
// passes through unlocked; every other is locked, whatever its method and
// headers: a CORS preflight too, so put echo's CORS middleware in front,
// with e.Use, to answer preflights without the lock.
//
// The middleware waits on the request's context, then calls the handler with
// the request's context replaced by one that carries the lease (Lease(c),
// core.LeaseFromContext) and is cancelled when the request ends or the lease
// is lost (context.Cause ErrLost). The lock is released in a defer, with a
// detached and bounded context, once the handler returned: a client hanging
// up or a panic (with middleware.Recover in front) never strands it.
//
// Outcomes are returned as *echo.HTTPError to the app's HTTPErrorHandler
// (Retry-After and Content-Type application/problem+json set on the
// response before returning; the middleware itself never writes), its
// Message the RFC 9457 problem document (guard.Problem), so echo's
// default error handler answers problem+json: 409 when another request was
// seen holding the lock past the wait budget, 503 when Redis is unreachable (fail-closed; FailOpen runs the
// handler unlocked and tells the Observer) or the request's deadline passed
// while waiting, 400 when the key cannot be taken from the request, 500 when
// the server is misconfigured. The HTTPError wraps the core error
// (errors.Is(err, core.ErrNotAcquired)). DenyHandler (409) and ErrorHandler
// (the rest) replace them. Nothing is returned for a client that went away
// while waiting (499 is recorded as the status for the access log).
//
// Path parameters are decoded to their end (guard.ParamValue): echo hands
// them over still escaped when the request's path had escapes it routed on
// (/orders/%34%32 gives "%34%32" to c.Param), and the middleware decodes
// them, so the key is the id's whatever its spelling ("order:42"), the key
// gin builds.
//
// echo5lock is the same middleware for echo v5.
package echolock
