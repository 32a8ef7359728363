// Package guard is the seam between lockkit's engine (core) and the
// adapters that put a lock in front of request handlers: everything of the
// contract that depends on no framework, written once, for lockkit's own
// adapters (ginlock, echolock, echo5lock, httplock, fiberlock, grpclock,
// connectlock) and for one written outside this repository (hertz, ...). An
// adapter only maps its framework's request and answer types onto it;
// testing/conformance then checks that it behaves as lockkit's do.
//
// The name says what it holds: what guards a handler. A Config (the
// adapter's options as values: the keys, the core.Request every acquire
// makes, the release timeout, the retry hint) is checked once by New (one
// validation for every adapter, whose TTL rule is core.New's too) into a
// Policy; per request, Policy.Acquire builds the keys and takes the lock,
// and the Hold it returns carries the handler's context, the outcome and
// the release, with a context detached from the request and bounded:
//
//	p, err := guard.New(guard.Config[fiber.Ctx]{Client: client, Keys: keys, Request: core.Request{Wait: 5 * time.Second}})
//	...
//	h := p.Acquire(ctx, c, route, method)
//	if !h.OK() {
//		a := p.Answer(h) // RFC 9457 problem+json, identical on every HTTP adapter
//		a.SetHeaders(c)  // any HeaderSetter: http.Header, a fiber.Ctx
//		return c.Status(a.Status).Send(a.Body())
//	}
//	defer h.Release()
//	next(h.Ctx)
//
// Key parts: Const and Func for any request type; Param, Header, Query and
// Cookie read an HTTP request through the adapter's HTTPReader, which hands
// each source over as sent, with no net/http type (fiberlock reads
// fasthttp's request as it is), each with
// one decoding rule (ParamValue: decoded until no escape is left;
// CookieValue: percent-decoded once, '+' a space), and every value one
// validation (CheckValue: no control character); NewPart adds a protocol's own
// source. Join joins parts with core.JoinKey, Verbatim takes a whole key,
// RouteKey keys by the matched route.
//
// Answers: AnswerFor and Status map an outcome (core.Outcome) to an HTTP
// status, a Retry-After and a problem document, with the same headers on
// every adapter (Answer.SetHeaders); RPCCode maps it to an RPC code
// numbered as gRPC and connect number theirs, and Rejection carries the
// message and the retry hint. SafeMethod says which methods take the read
// side. No request passes a lock unlocked by what it carries: a method, a
// header (a CORS preflight's Origin and Access-Control-Request-Method are
// any client's to send) or a spelling; skipping is the server's choice
// alone (a Skipper).
//
// A middleware configured by a struct of fields whose answers return an
// error (echo's Config; hertz's) declares its Config as
// MiddlewareConfig of its request type: NewMiddleware reads and checks it
// into a Middleware, which also skips, answers and reports as its fields
// say, so the adapter only maps its framework's request and answers.
//
// Idempotency: a retried request runs once. NewIdempotency checks a
// route's options (IdempotencyOption: the key header, Required, Methods,
// Scope, MaxBody, Retention, StoreEveryAnswer, ReplayHeaders, Wait); per
// request ClientKey reads the client's key (ParseIdempotencyKey: an
// sf-string or a bare value), ReadBody buffers the body under its cap
// (413 past it), RecordKey and Fingerprint say which record and which
// request, ResponseCapture (or a Response the adapter fills) records the
// handler's answer, Stores decides whether it is kept, EncodeResponse and
// DecodeResponse are the record's bytes, Response.Write replays it, and
// IdempotencyAnswer is the middleware's own answer (400, 409, 413, 422), the
// same problem+json as a lock's. core keeps the records. IdempotencyPolicy
// (NewIdempotencyPolicy: the options and a Client) puts the pieces in
// order, once for every adapter: Serve runs one request through them, the
// adapter supplying its framework's side of it (IdempotencyExchange: the
// body, the rest of the chain with its answer captured, the answers).
//
// A fail-open run (core.Request.FailOpen) is reported to the Client's
// Observer by core itself when it runs unlocked, so no adapter can forget
// it or report it for the wrong outcome.
package guard
