// Package httplock is lockkit's HTTP answer: the one mapping, shared by
// every HTTP adapter (ginlock, echolock, echo5lock), from a lock outcome
// (core.Outcome) to a status, a Retry-After header and an RFC 9457
// application/problem+json body.
//
//	outcome                              status  Retry-After  body
//	OutcomeContended, OutcomeTimeout     409     yes          problem
//	OutcomeLost                          409     yes          problem
//	OutcomeUnavailable                   503     yes          problem
//	OutcomeDeadline                      503     yes          problem
//	OutcomeBadKey                        400     no           problem, naming the missing part
//	OutcomeMisconfigured                 500     no           problem
//	OutcomeCanceled                      499     no           none: the client went away (recorded for access logs)
//
// A problem's detail never names the holder: its owner and metadata may be
// another tenant's.
package httplock
