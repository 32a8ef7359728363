package guard

import (
	"net/http"

	"github.com/lockkit/lockkit/core"
)

// Responders are an adapter's own answers to requests that may not run, by
// outcome: its On* options (echo's DenyHandler and ErrorHandler), each
// bound to the framework's request C. An outcome without one is answered
// by default.
type Responders[C any] map[core.Outcome]func(c C, h *Hold) error

// The outcomes an adapter's custom answers cover, in groups.
var (
	// Denied are the outcomes of a lock seen held (core.Outcome.NotAcquired):
	// an adapter's OnContended and OnLimited, echo's DenyHandler.
	Denied = []core.Outcome{core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLimited}
	// Failed are every other outcome that stops a request: echo's
	// ErrorHandler.
	Failed = []core.Outcome{
		core.OutcomeUnavailable, core.OutcomeDeadline, core.OutcomeClosed, core.OutcomeBadKey,
		core.OutcomeMisconfigured, core.OutcomeCanceled,
	}
)

// On sets f as the answer of outcomes; a nil f sets nothing.
func (rs Responders[C]) On(f func(c C, h *Hold) error, outcomes ...core.Outcome) {
	if f == nil {
		return
	}
	for _, o := range outcomes {
		rs[o] = f
	}
}

// Respond answers h with the responder set for its outcome, if any, after
// setting a's Retry-After on hdr (the only header a custom answer gets from
// the default one): answered is true then, and err what the responder
// returned. Otherwise the adapter answers a by default (Answer.Write, or
// Answer.SetHeaders and the framework's error).
func (rs Responders[C]) Respond(c C, h *Hold, a Answer, hdr http.Header) (answered bool, err error) {
	f := rs[h.Outcome]
	if f == nil {
		return false, nil
	}
	a.SetRetryAfter(hdr)
	return true, f(c, h)
}

// ErrResponder makes a responder of f, an answer taking the request's
// cause (echo's ErrorHandler); nil when f is nil.
func ErrResponder[C any](f func(c C, err error) error) func(C, *Hold) error {
	if f == nil {
		return nil
	}
	return func(c C, h *Hold) error { return f(c, h.Err) }
}

// KeyErrResponder makes a responder of f, an answer taking the request's
// key and cause (echo's DenyHandler); nil when f is nil.
func KeyErrResponder[C any](f func(c C, key string, err error) error) func(C, *Hold) error {
	if f == nil {
		return nil
	}
	return func(c C, h *Hold) error { return f(c, h.Key, h.Err) }
}
