package guard

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Header names and values of the HTTP answers.
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

// DefaultRetryAfter is the retry hint of a refused request or call when the
// adapter's RetryAfter option gives none. The holder's remaining TTL is no
// guide: renewal keeps it near the full TTL.
const DefaultRetryAfter = time.Second

// Status is the HTTP status of outcome o; 0 for the outcomes that let the
// handler run (OutcomeAcquired, OutcomeUnlocked).
//
//	outcome                              status  Retry-After  body
//	OutcomeContended, OutcomeTimeout     409     yes          problem
//	OutcomeLost                          409     yes          problem
//	OutcomeLimited                       429     yes          problem (every permit of the key held)
//	OutcomeUnavailable                   503     yes          problem
//	OutcomeDeadline                      503     yes          problem
//	OutcomeClosed                        503     yes          problem (the Client was closed)
//	OutcomeBadKey                        400     no           problem, naming the missing part
//	OutcomeMisconfigured                 500     no           problem
//	OutcomeCanceled                      499     no           none: the client went away (recorded for access logs)
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
// detail says what failed (the sentence RPC answers say too), never who
// holds the lock: its owner and metadata may be another tenant's.
func ProblemFor(o core.Outcome, err error) Problem {
	status := Status(o)
	if status == 0 || status == StatusClientClosedRequest {
		status = http.StatusInternalServerError
	}
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: sentence(o, err, "request")}
	switch {
	case o == core.OutcomeBadKey:
		if err != nil {
			p.Detail = err.Error()
		}
	case p.Detail == "":
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

// AnswerFor is the answer to outcome o with error err and retry hint
// after (rounded up to whole seconds, at least 1).
func AnswerFor(o core.Outcome, err error, after time.Duration) Answer {
	a := Answer{Status: Status(o)}
	if o == core.OutcomeCanceled {
		return a
	}
	p := ProblemFor(o, err)
	return problemAnswer(p.Status, p.Detail, after)
}

// problemAnswer is the answer of status with a problem saying detail, and
// Retry-After where retrying later can work (409, 429, 503): the one shape
// of every answer the middleware writes itself, a lock's or idempotency's.
func problemAnswer(status int, detail string, after time.Duration) Answer {
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
	a := Answer{Status: status, Problem: &p}
	switch status {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		a.RetryAfter = strconv.Itoa(RetryAfterSeconds(after))
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

// HeaderSetter sets a response header, replacing any value it had: what an
// answer needs of a framework's response. http.Header is one; so is a
// fiber.Ctx (its Set).
type HeaderSetter interface {
	Set(name, value string)
}

// SetRetryAfter sets the answer's Retry-After on h, if it has one: all a
// custom answer (an adapter's On* responder) gets from the default.
func (a Answer) SetRetryAfter(h HeaderSetter) {
	if a.RetryAfter != "" {
		h.Set(HeaderRetryAfter, a.RetryAfter)
	}
}

// SetHeaders sets every header of the answer on h, the same on every
// adapter: Retry-After where it applies and, when it has a body,
// Content-Type application/problem+json with X-Content-Type-Options
// nosniff (a browser must not read the error as something else). An
// adapter whose framework writes the body itself (echo's error handler)
// sets them before handing the answer over.
func (a Answer) SetHeaders(h HeaderSetter) {
	a.SetRetryAfter(h)
	if a.Problem != nil {
		h.Set("Content-Type", ProblemContentType)
		h.Set("X-Content-Type-Options", "nosniff")
	}
}

// Write writes the answer to w: its headers, its status, the problem. An
// answer without a body (the client went away) writes nothing: there is
// nobody to read it. A framework not on net/http writes SetHeaders, Status
// and Body through its own response instead.
func (a Answer) Write(w http.ResponseWriter) {
	if a.Problem == nil {
		return
	}
	a.SetHeaders(w.Header())
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body())
}

// Body is the answer's body, its problem document as JSON; nil when it has
// none (the client went away).
func (a Answer) Body() []byte {
	if a.Problem == nil {
		return nil
	}
	return a.Problem.JSON()
}
