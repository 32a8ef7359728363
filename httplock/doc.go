// Package httplock is net/http middleware that runs a handler under a
// distributed lock (lockkit's core engine on Redis), for services on the
// standard library's ServeMux (Go 1.22 patterns), chi, or anything that
// sets r.Pattern and the request's path values; it imports nothing but the
// standard library and lockkit:
//
//	lockOrder := httplock.New(client, httplock.Key(httplock.Const("order"), httplock.Param("id")))
//	mux.Handle("POST /orders/{id}/pay", lockOrder(pay))
//	mux.Handle("POST /orders/{id}/refund", lockOrder(refund)) // same key "order:<id>"
//
// It keeps the contract of every lockkit adapter (ginlock, echolock,
// echo5lock, grpclock): the same options and defaults, the same key for
// the same parts, path values decoded by one rule (guard.ParamValue), and
// the same answers.
//
// Every outcome is answered as package guard maps it (guard.Status,
// guard.AnswerFor): the same status, Retry-After and RFC 9457
// application/problem+json body, with the same headers, as on every lockkit
// HTTP adapter; an On* option replaces an answer.
package httplock
