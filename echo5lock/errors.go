package echo5lock

import (
	"fmt"

	"github.com/labstack/echo/v5"

	"github.com/lockkit/lockkit/guard"
)

// ErrNoRouteParam is the error (500) of a key part naming a path parameter
// that the matched route does not have: a mistake in the server's routes,
// not in the request. It is shared by every HTTP adapter.
var ErrNoRouteParam = guard.ErrNoRouteParam

// Error is what the middleware returns to echo for a request it stops. It
// carries the problem document and the core error, and speaks every error
// protocol echo v5 knows, so each of its error handlers answers RFC 9457:
// DefaultHTTPErrorHandler takes its status (StatusCode) and its JSON (the
// problem; the middleware set Content-Type application/problem+json
// beforehand, which echo keeps), ProblemDetailsHTTPErrorHandler its
// ProblemError. errors.Is/As reach the core error (core.ErrNotAcquired,
// core.ErrUnavailable, ...) through Unwrap.
type Error struct {
	Problem guard.Problem
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("echo5lock: %d %s: %v", e.Problem.Status, e.Problem.Detail, e.Err)
}

// Unwrap returns the core error.
func (e *Error) Unwrap() error { return e.Err }

// StatusCode is the answer's HTTP status (echo.HTTPStatusCoder).
func (e *Error) StatusCode() int { return e.Problem.Status }

// MarshalJSON is the problem document.
func (e *Error) MarshalJSON() ([]byte, error) { return e.Problem.JSON(), nil }

// ProblemError is the problem document as echo's own type (echo.ProblemErrorer).
func (e *Error) ProblemError() *echo.ProblemError {
	p := e.Problem
	return &echo.ProblemError{Type: p.Type, Title: p.Title, Status: p.Status, Detail: p.Detail, Instance: p.Instance}
}
