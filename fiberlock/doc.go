// Package fiberlock is fiber (v3) middleware that runs a handler under a
// distributed lock (lockkit's core engine on Redis), so requests touching
// the same resource run one at a time across every replica and every
// route, and every framework, that names it:
//
//	lockOrder := fiberlock.New(client, fiberlock.Key(fiberlock.Const("order"), fiberlock.Param("id")))
//	app.Post("/orders/:id/pay", lockOrder, pay)
//	app.Post("/orders/:id/refund", lockOrder, refund) // same key "order:<id>"
//
// It keeps the contract of every lockkit adapter (ginlock, echolock,
// echo5lock, httplock, grpclock, connectlock), written once in package
// guard and checked by testing/conformance: the same options, defaults and
// names (functional options, as ginlock's and httplock's), the same key for
// the same parts, each source read by one rule, and the same answers (RFC
// 9457 problem+json, 409/429/503 with Retry-After, 400, 500). It reads
// fiber's request as fasthttp holds it and writes fiber's response: no
// request is converted to net/http.
//
// Install it on each route, as above, or in a route's handler list: fiber
// runs the handlers of app.Use and of a group's Use before it knows which
// route a request matches, so installed there the middleware sees the
// Use's own path: a Param part then answers 500 (logged once), and every
// path under the prefix takes a lock. Skipping follows fiber's convention
// for its middleware: Next(f) skips a request when f returns true (the
// other adapters' Skipper).
//
// Where fiber differs from the net/http frameworks, and what the lock does:
//
//   - fasthttp reads a request's body before handlers run and writes the
//     answer after they return (unless the app streams bodies,
//     StreamRequestBody), so a handler never waits on its client under the
//     lock, and a client dribbling its body holds no lock meanwhile.
//     MaxHold ends the handler's context at its bound and the lock is
//     released when the handler returns; with StreamRequestBody a handler
//     reading the body stream is not released early.
//   - fasthttp does not end a request's context when its client goes away:
//     a request waiting for the lock waits until its wait budget or its own
//     deadline, and a running handler is not told.
//   - The request's context is c.Context() (fiber's, context.Background()
//     unless a middleware in front set one with c.SetContext): the wait is
//     bounded by it and by the wait budget, and the handler runs with
//     c.Context() bound to the lease (Lease(c), core.LeaseFromContext):
//     cancelled when the lease is lost (cause core.ErrLost) or held for its
//     MaxHold (core.ErrMaxHold).
//   - Path parameters are read as c.Params hands them over (escaped, unless
//     the app sets UnescapePath) and decoded by guard.ParamValue, so the key
//     is the same whatever the setting, and the same as gin's or echo's for
//     the same id.
//   - A header part is c.Get's value (fasthttp's first value of the
//     header); a query part and a cookie part read the query string and the
//     Cookie header lines as sent, by net/http's rules (guard.QueryValue,
//     guard.CookieRaw), so a mixed fleet keys them alike.
package fiberlock
