// Package echo5lock is echo (v5) middleware that runs a handler under a
// distributed lock (lockkit's core engine on Redis), so requests touching
// the same resource run one at a time across every replica and every route
// that names it:
//
//	lockOrder := echo5lock.New(client, "const:order,param:id")
//	e.POST("/orders/:id/pay", pay, lockOrder)
//	e.POST("/orders/:id/refund", refund, lockOrder) // same key "order:<id>"
//
// Config holds the other settings (Wait, NoWait, TTL, FailOpen, the
// answers, and the kind of lock: Limit for a semaphore of Limit per key,
// answered 429 when full; ReadWrite for a read/write lock; Keys for several
// keys taken together); its ToMiddleware returns a configuration error (matching
// core.ErrInvalidOption) where New and NewWithConfig panic:
//
//	lockOrder, err := echo5lock.Config{Client: client, KeyParts: "const:order,param:id", NoWait: true}.ToMiddleware()
//	if err != nil { ... }
//
// KeyParts lists the parts of the key, every one required and all joined
// in order (as every lockkit adapter joins them): sources const, param, header, query and
// cookie. "const:order,param:id" gives exactly "order:42", the key the gin,
// echo v4, net/http and gRPC adapters build from the same parts. KeyFunc
// returns a whole key instead (used verbatim). The route template (c.Path())
// is only the telemetry name; a request that matched no route passes
// through unlocked; every other is locked, whatever its method and headers:
// a CORS preflight too, so put echo's CORS middleware in front, with e.Use,
// to answer preflights without the lock.
//
// The middleware waits on the request's context (Wait, default 10s, or
// NoWait), then calls the handler with the request's context replaced by
// one that carries the lease (Lease(c), core.LeaseFromContext) and is
// cancelled when the request ends or the lease is lost (context.Cause
// core.ErrLost). The lock is released in a defer, with a detached and
// bounded context, once the handler returned: a client hanging up or a
// panic (with middleware.Recover in front) never strands it. A lease lost
// while the handler ran, or a failed release, goes to ReleaseErrorHandler
// (default: c.Logger()).
//
// A request the middleware stops is never written by it: it returns an
// *Error to echo, carrying the RFC 9457 problem document and wrapping the
// core error (errors.Is(err, core.ErrNotAcquired)), with Content-Type
// application/problem+json (and Retry-After on 409 and 503) already set on
// the response. echo
// v5's DefaultHTTPErrorHandler answers it as problem+json, and
// ProblemDetailsHTTPErrorHandler takes it as its echo.ProblemError: 409
// when another request was seen holding the lock past the wait budget, 503
// when Redis is unreachable (fail-closed; FailOpen runs the handler
// unlocked and tells the Observer) or the request's deadline passed while
// waiting, 400 when the key cannot be taken from the request, 500 when the
// server is misconfigured. DenyHandler (409) and ErrorHandler (the rest)
// replace them. Nothing is returned for a client that went away while
// waiting (499 is recorded as the status for the access log).
//
// Path values are decoded to their end (guard.ParamValue): echo v5 hands
// them over escaped when it routed on the raw path, unless the router was
// built with UnescapePathParamValues, and the key is the id's either way,
// whatever its spelling ("order:42").
//
// echolock is the same middleware for echo v4.
package echo5lock
