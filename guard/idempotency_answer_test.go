package guard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Idempotency's answers have the shape of every answer of the middleware:
// problem+json, nosniff, Retry-After on 409 only, a detail that says what
// is wrong and never the key.
func TestIdempotencyAnswers(t *testing.T) {
	_, _, keyErr := guard.ParseIdempotencyKey([]string{`"secret-key`})
	for _, tc := range []struct {
		err    error
		status int
		retry  string
	}{
		{keyErr, 400, ""},
		{fmt.Errorf("%w: this request requires an Idempotency-Key header", guard.ErrIdempotencyKeyMissing), 400, ""},
		{guard.ErrIdempotencyInProgress, 409, "2"},
		{guard.ErrIdempotencyTakenOver, 409, "2"},
		{fmt.Errorf("%w (1048576 bytes)", guard.ErrBodyTooLarge), 413, ""},
		{core.ErrFingerprint, 422, ""},
		{errors.New("something else"), 500, ""},
	} {
		w := httptest.NewRecorder()
		a := guard.IdempotencyAnswer(tc.err, 1500*time.Millisecond)
		a.Write(w)
		var p guard.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != tc.status || p.Status != tc.status || p.Type != "about:blank" || p.Title == "" || p.Detail == "" {
			t.Errorf("%v: %d %q", tc.err, w.Code, w.Body.String())
		}
		if got := w.Header().Get("Retry-After"); got != tc.retry {
			t.Errorf("%v: Retry-After %q, want %q", tc.err, got, tc.retry)
		}
		if w.Header().Get("Content-Type") != guard.ProblemContentType || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%v: headers %v", tc.err, w.Header())
		}
		if tc.status != 500 && p.Detail != tc.err.Error() {
			t.Errorf("%v: detail %q", tc.err, p.Detail)
		}
		if strings.Contains(w.Body.String(), "secret-key") {
			t.Errorf("%v: the answer repeats the key: %s", tc.err, w.Body.String())
		}
		if json.Valid(w.Body.Bytes()) && (w.Body.String() != string(a.Body())) {
			t.Errorf("%v: Write and Body differ", tc.err)
		}
	}
	// The same shape as a lock's own answer of the same status.
	lock := guard.AnswerFor(core.OutcomeContended, nil, time.Second)
	idem := guard.IdempotencyAnswer(guard.ErrIdempotencyInProgress, time.Second)
	if lock.Status != idem.Status || lock.RetryAfter != idem.RetryAfter || lock.Problem.Title != idem.Problem.Title || lock.Problem.Type != idem.Problem.Type {
		t.Errorf("a lock's 409 %+v, idempotency's %+v", lock, idem)
	}
}
