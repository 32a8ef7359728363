package keyspec

import (
	"net/http"
	"strconv"
	"time"

	"github.com/lockkit/lockkit/internal/adapt"
)

// StatusClientClosedRequest is recorded (never sent to anyone listening)
// when the client went away while its request waited for the lock: nginx's
// 499, so access logs tell it from a success.
const StatusClientClosedRequest = 499

// HeaderRetryAfter is the response header of a retry hint.
const HeaderRetryAfter = "Retry-After"

// Answer is what an HTTP adapter answers when a request cannot run.
type Answer struct {
	Status int
	// RetryAfter is the Retry-After header value in seconds ("" for none):
	// set for 409 and 503, the outcomes where retrying later can work.
	RetryAfter string
	// Problem is the body (nil when nothing is to be written).
	Problem *adapt.Problem
}

// AnswerFor is the answer DESIGN.md's table gives kind k. retryAfter is the
// adapter's RetryAfter option (nil: adapt.DefaultRetryAfter).
func AnswerFor(k adapt.Kind, err error, retryAfter func(error) time.Duration) Answer {
	if k == adapt.ClientGone {
		return Answer{Status: StatusClientClosedRequest}
	}
	a := Answer{Status: k.HTTPStatus()}
	if a.Status == 0 { // not an outcome that stops the request; be safe
		a.Status = http.StatusInternalServerError
	}
	switch k {
	case adapt.Contended, adapt.Unavailable, adapt.Deadline:
		a.RetryAfter = strconv.Itoa(int(adapt.RetryAfter(retryAfter, err) / time.Second))
	}
	p := adapt.ProblemFor(k, err)
	if p.Status == 0 {
		p = adapt.ProblemFor(adapt.Misconfigured, err)
	}
	a.Problem = &p
	return a
}

// Message is the short text of an answer, for frameworks whose error type
// carries a string (echo's HTTPError).
func (a Answer) Message() string {
	if a.Problem == nil {
		return http.StatusText(a.Status)
	}
	if a.Problem.Detail != "" {
		return a.Problem.Detail
	}
	return a.Problem.Title
}
