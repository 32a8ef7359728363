// Package echo5lock is echolock for echo v5: the same configuration, key
// specs, outcomes and guarantees, with echo v5's glue (*echo.Context,
// Config.ToMiddleware returning an error rather than panicking). Everything
// but that glue is shared with echolock and ginlock (internal/adapt,
// internal/keyspec).
//
//	mw, err := echo5lock.Config{Client: client, KeyParts: "const:order,param:id"}.ToMiddleware()
//	if err != nil { ... }
//	e.POST("/orders/:id/pay", pay, mw)
//
// See echolock's documentation for the behaviour; it is identical, but for
// the error returned to echo: a *Error carrying the RFC 9457 problem
// document, which echo v5's DefaultHTTPErrorHandler answers as
// application/problem+json and ProblemDetailsHTTPErrorHandler takes as its
// echo.ProblemError. Path values are decoded once: echo v5 hands them over
// escaped when it routed on the raw path, unless the router was built with
// UnescapePathParamValues, and the middleware tells the two apart.
package echo5lock
