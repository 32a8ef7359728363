// Package httplock is net/http middleware that runs a handler under a
// distributed lock (lockkit's core engine on Redis), for services on the
// standard library's ServeMux (Go 1.22 patterns), chi, or anything that
// sets r.Pattern and the request's path values; it imports nothing but the
// standard library and lockkit:
//
//	lockOrder := httplock.New(client, httplock.Key(httplock.Const("order"), httplock.PathValue("id")))
//	mux.Handle("POST /orders/{id}/pay", lockOrder(pay))
//	mux.Handle("POST /orders/{id}/refund", lockOrder(refund)) // same key "order:<id>"
//
// It keeps the contract of every lockkit adapter (ginlock, echolock,
// echo5lock, grpclock): the same options and defaults, the same key for
// the same parts, path values decoded exactly once, and the same answers.
//
// The package is also lockkit's HTTP answer: the one mapping, used by every
// HTTP adapter, from a lock outcome (core.Outcome) to a status, a
// Retry-After header and an RFC 9457 application/problem+json body.
//
//	outcome                              status  Retry-After  body
//	OutcomeContended, OutcomeTimeout     409     yes          problem
//	OutcomeLost                          409     yes          problem
//	OutcomeLimited                       429     yes          problem (Limit: every permit of the key held)
//	OutcomeUnavailable                   503     yes          problem
//	OutcomeDeadline                      503     yes          problem
//	OutcomeClosed                        503     yes          problem (the Client was closed)
//	OutcomeBadKey                        400     no           problem, naming the missing part
//	OutcomeMisconfigured                 500     no           problem
//	OutcomeCanceled                      499     no           none: the client went away (recorded for access logs)
//
// A problem's detail never names the holder: its owner and metadata may be
// another tenant's.
package httplock
