package guard

import (
	"errors"
	"net/http"
	"time"
)

// ErrFingerprintMismatch is the error (422) of a request whose key's record
// was made by another request (another body, query, Content-Type, method
// or route): the key was reused by mistake, and the first request's answer
// is not this one's. It is decided before ErrIdempotencyInProgress, so a
// changed payload is told so even while the first request runs.
var ErrFingerprintMismatch = errors.New("the idempotency key was used for another request")

// ErrIdempotencyInProgress is the error (409 with Retry-After) of a request
// whose key is being run by another request that has not finished: the
// retry comes back later for the one stored answer.
var ErrIdempotencyInProgress = errors.New("a request with this idempotency key is in progress; retry later")

// ErrIdempotencyTakenOver is the error (409 with Retry-After) of a request
// whose claim was taken over while its handler ran (its lease ended, and a
// retry runs the key now): its answer is not stored, and the client
// fetches the one that is.
var ErrIdempotencyTakenOver = errors.New("another request took over this idempotency key; retry later")

// IdempotencyStatus is the HTTP status of the middleware's own answer to
// err; 0 when err is none of its errors.
//
//	ErrIdempotencyKey, ErrIdempotencyKeyMissing      400
//	ErrBodyUnread                                     400
//	ErrIdempotencyInProgress, ErrIdempotencyTakenOver 409 + Retry-After
//	ErrBodyTooLarge                                   413
//	ErrFingerprintMismatch                            422
func IdempotencyStatus(err error) int {
	switch {
	case errors.Is(err, ErrIdempotencyKey), errors.Is(err, ErrIdempotencyKeyMissing), errors.Is(err, ErrBodyUnread):
		return http.StatusBadRequest
	case errors.Is(err, ErrIdempotencyInProgress), errors.Is(err, ErrIdempotencyTakenOver):
		return http.StatusConflict
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrFingerprintMismatch):
		return http.StatusUnprocessableEntity
	}
	return 0
}

// IdempotencyAnswer is the answer to a request idempotency refused with err
// (IdempotencyStatus), with retry hint after where it has one: the same
// problem+json, headers and Retry-After rounding as every other answer of
// the middleware (AnswerFor), written and set the same way (Answer.Write,
// Answer.SetHeaders). Its detail is err's message, which never holds the
// key or the body. An err that is none of idempotency's errors is a 500.
func IdempotencyAnswer(err error, after time.Duration) Answer {
	status := IdempotencyStatus(err)
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	if status == 0 {
		status, detail = http.StatusInternalServerError, "the idempotency middleware is misconfigured"
	}
	return problemAnswer(status, detail, after)
}
