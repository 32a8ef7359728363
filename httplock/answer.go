package httplock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
)

// Header names and values of the answers.
const (
	// ProblemContentType is RFC 9457's media type for error bodies.
	ProblemContentType = "application/problem+json"
	// HeaderRetryAfter carries the retry hint of 409, 429 and 503 answers.
	HeaderRetryAfter = "Retry-After"
	// StatusClientClosedRequest is recorded (never sent to anyone listening)
	// when the client went away while its request waited for the lock:
	// nginx's 499, so access logs tell it from a success.
	StatusClientClosedRequest = 499
)

// Status is the HTTP status of outcome o; 0 for the outcomes that let the
// handler run (OutcomeAcquired, OutcomeUnlocked).
func Status(o core.Outcome) int {
	switch o {
	case core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLost:
		return http.StatusConflict
	case core.OutcomeLimited:
		return http.StatusTooManyRequests
	case core.OutcomeUnavailable, core.OutcomeDeadline, core.OutcomeClosed:
		return http.StatusServiceUnavailable
	case core.OutcomeBadKey:
		return http.StatusBadRequest
	case core.OutcomeMisconfigured:
		return http.StatusInternalServerError
	case core.OutcomeCanceled:
		return StatusClientClosedRequest
	case core.OutcomeAcquired, core.OutcomeUnlocked:
		return 0
	}
	return http.StatusInternalServerError
}

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// JSON encodes p.
func (p Problem) JSON() []byte {
	b, _ := json.Marshal(p)
	return b
}

// ProblemFor is the problem document of outcome o with error err. The
// detail says what failed, never who holds the lock.
func ProblemFor(o core.Outcome, err error) Problem {
	status := Status(o)
	if status == 0 || status == StatusClientClosedRequest {
		status = http.StatusInternalServerError
	}
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	switch o {
	case core.OutcomeContended, core.OutcomeTimeout:
		p.Detail = "the resource is locked by another request; retry later"
	case core.OutcomeLimited:
		p.Detail = "too many requests for the resource at once; retry later"
	case core.OutcomeLost:
		p.Detail = "the lock on the resource was lost while the request ran; retry later"
	case core.OutcomeUnavailable:
		p.Detail = "the lock service is unavailable"
	case core.OutcomeDeadline:
		p.Detail = "the request's deadline passed while waiting for the lock"
	case core.OutcomeClosed:
		p.Detail = "the service is shutting down"
	case core.OutcomeBadKey:
		if err != nil {
			p.Detail = err.Error()
		}
	default:
		p.Detail = "the lock middleware is misconfigured"
	}
	return p
}

// Answer is what an HTTP adapter answers when a request cannot run.
type Answer struct {
	Status int
	// RetryAfter is the Retry-After value in whole seconds ("" for none):
	// set where retrying later can work (409, 429, 503).
	RetryAfter string
	// Problem is the body; nil when nothing is to be written (the client
	// went away).
	Problem *Problem
}

// AnswerFor is the answer to outcome o with error err. retryAfter is the
// adapter's RetryAfter option (nil: one second); the hint is rounded up to
// whole seconds, at least 1.
func AnswerFor(o core.Outcome, err error, retryAfter func(error) time.Duration) Answer {
	a := Answer{Status: Status(o)}
	if o == core.OutcomeCanceled {
		return a
	}
	p := ProblemFor(o, err)
	a.Status, a.Problem = p.Status, &p
	switch a.Status {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		a.RetryAfter = strconv.Itoa(RetryAfterSeconds(adapt.RetryHint(retryAfter, err)))
	}
	return a
}

// RetryAfterSeconds rounds a retry hint up to the header's whole seconds,
// at least 1.
func RetryAfterSeconds(d time.Duration) int {
	if d < time.Second {
		return 1
	}
	return int((d + time.Second - 1) / time.Second)
}

// SetHeaders sets the answer's Retry-After and, when it has a body, its
// Content-Type on h.
func (a Answer) SetHeaders(h http.Header) {
	if a.RetryAfter != "" {
		h.Set(HeaderRetryAfter, a.RetryAfter)
	}
	if a.Problem != nil {
		h.Set("Content-Type", ProblemContentType)
	}
}

// Write writes the answer to w. An answer without a body (the client went
// away) writes nothing: there is nobody to read it.
func (a Answer) Write(w http.ResponseWriter) {
	if a.Problem == nil {
		return
	}
	a.SetHeaders(w.Header())
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Problem.JSON())
}

// Message is the answer's short text, for frameworks whose error type
// carries a string.
func (a Answer) Message() string {
	if a.Problem == nil {
		return http.StatusText(a.Status)
	}
	if a.Problem.Detail != "" {
		return a.Problem.Detail
	}
	return a.Problem.Title
}
