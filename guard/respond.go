package guard

import (
	"github.com/lockkit/lockkit/core"
)

// Refusal is a group of outcomes that one custom answer of an adapter
// replaces: its On* option of the same name (OnContended, OnLimited, ...),
// the same groups in every adapter.
type Refusal uint8

// The refusals, each with the outcomes it covers.
const (
	// Contended: the lock was seen held past the wait budget, or at the one
	// attempt of NoWait (OutcomeContended, OutcomeTimeout). 409 / Aborted.
	Contended Refusal = iota + 1
	// Limited: every permit of a Limit was held (OutcomeLimited). 429 /
	// ResourceExhausted.
	Limited
	// Unavailable: Redis did not answer (fail-closed), the request's
	// deadline passed while it waited, or the Client was closed
	// (OutcomeUnavailable, OutcomeDeadline, OutcomeClosed). 503 /
	// Unavailable, DeadlineExceeded.
	Unavailable
	// BadKey: the key cannot be taken from the request (OutcomeBadKey).
	// 400 / InvalidArgument.
	BadKey
	// Misconfigured: the server's mistake (OutcomeMisconfigured). 500 /
	// Internal.
	Misconfigured
	// ClientGone: the client went away while its request waited
	// (OutcomeCanceled): nothing written / Canceled.
	ClientGone
	// Lost: the lease ended while the handler ran, lost or held for its
	// MaxHold, and an RPC handler failed for it (OutcomeLost): Aborted. An
	// HTTP answer is written by then; the release-error hook hears of it.
	Lost
)

// Outcomes are the outcomes r covers.
func (r Refusal) Outcomes() []core.Outcome {
	switch r {
	case Contended:
		return []core.Outcome{core.OutcomeContended, core.OutcomeTimeout}
	case Limited:
		return []core.Outcome{core.OutcomeLimited}
	case Unavailable:
		return []core.Outcome{core.OutcomeUnavailable, core.OutcomeDeadline, core.OutcomeClosed}
	case BadKey:
		return []core.Outcome{core.OutcomeBadKey}
	case Misconfigured:
		return []core.Outcome{core.OutcomeMisconfigured}
	case ClientGone:
		return []core.Outcome{core.OutcomeCanceled}
	case Lost:
		return []core.Outcome{core.OutcomeLost}
	}
	return nil
}

// Responders are an adapter's own answers to requests that may not run, by
// outcome: its On* options (echo's DenyHandler and ErrorHandler), each
// bound to the framework's request C. An outcome without one is answered
// by default.
type Responders[C any] map[core.Outcome]func(c C, h *Hold) error

// On sets f as the answer of every outcome of refusals; a nil f restores
// their default answer (see on).
func (rs Responders[C]) On(f func(c C, h *Hold) error, refusals ...Refusal) { on(rs, f, refusals) }

// on sets f as the answer of every outcome of refusals in rs, an HTTP or
// an RPC adapter's responders: the one rule of every adapter for a nil f,
// which means the default answer, so OnX(f) then OnX(nil) answers as if
// OnX was never given (an option list built conditionally can unset one).
// An adapter that wraps its own responder type must pass nil on as nil.
func on[A, B any](rs map[core.Outcome]func(A, B) error, f func(A, B) error, refusals []Refusal) {
	for _, r := range refusals {
		for _, o := range r.Outcomes() {
			if f == nil {
				delete(rs, o)
			} else {
				rs[o] = f
			}
		}
	}
}

// Respond answers h with the responder set for its outcome, if any, after
// setting a's Retry-After on hdr (the only header a custom answer gets from
// the default one): answered is true then, and err what the responder
// returned. Otherwise the adapter answers a by default (Answer.Write, or
// Answer.SetHeaders and the framework's error).
func (rs Responders[C]) Respond(c C, h *Hold, a Answer, hdr HeaderSetter) (answered bool, err error) {
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
