package guard_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Every answer with a body carries the same headers: problem+json,
// nosniff, and Retry-After where retrying can work; the body never names
// the holder.
func TestAnswerHeaders(t *testing.T) {
	na := &core.NotAcquiredError{Key: "order:1", Holder: core.Holder{Owner: "secret-tenant-host"}}
	for _, tc := range []struct {
		o      core.Outcome
		status int
		retry  string
	}{
		{core.OutcomeContended, 409, "2"},
		{core.OutcomeTimeout, 409, "2"},
		{core.OutcomeLimited, 429, "2"},
		{core.OutcomeUnavailable, 503, "2"},
		{core.OutcomeDeadline, 503, "2"},
		{core.OutcomeClosed, 503, "2"},
		{core.OutcomeBadKey, 400, ""},
		{core.OutcomeMisconfigured, 500, ""},
	} {
		w := httptest.NewRecorder()
		guard.AnswerFor(tc.o, na, 1500*time.Millisecond).Write(w)
		want := http.Header{"Content-Type": {guard.ProblemContentType}, "X-Content-Type-Options": {"nosniff"}}
		if tc.retry != "" {
			want.Set("Retry-After", tc.retry)
		}
		var p guard.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != tc.status || p.Status != tc.status || len(w.Header()) != len(want) {
			t.Errorf("%v: %d %v %q", tc.o, w.Code, w.Header(), w.Body.String())
		}
		for k := range want {
			if w.Header().Get(k) != want.Get(k) {
				t.Errorf("%v: %s = %q, want %q", tc.o, k, w.Header().Get(k), want.Get(k))
			}
		}
		if tc.o != core.OutcomeBadKey && json.Valid(w.Body.Bytes()) && strings.Contains(w.Body.String(), "secret-tenant-host") {
			t.Errorf("%v: the answer names the holder: %s", tc.o, w.Body.String())
		}
	}
	w := httptest.NewRecorder()
	guard.AnswerFor(core.OutcomeCanceled, errors.New("gone"), time.Second).Write(w)
	if w.Body.Len() != 0 || len(w.Header()) != 0 {
		t.Errorf("a client that went away was written to: %v %q", w.Header(), w.Body.String())
	}
}

// An HTTP answer's detail and an RPC answer's message say the same
// sentence of each outcome, the noun aside ("request", "call"): a bad key
// says its error and a misconfiguration is worded by each protocol.
func TestOneSentencePerOutcome(t *testing.T) {
	for _, o := range []core.Outcome{core.OutcomeContended, core.OutcomeTimeout, core.OutcomeLimited, core.OutcomeUnavailable,
		core.OutcomeDeadline, core.OutcomeClosed, core.OutcomeCanceled, core.OutcomeLost} {
		for _, err := range []error{errors.New("boom"), core.ErrMaxHold} {
			detail := guard.ProblemFor(o, err).Detail
			msg := (&guard.Rejection{Outcome: o, Err: err}).Message()
			if detail == "" || strings.ReplaceAll(msg, "call", "request") != "lockkit: "+detail {
				t.Errorf("%v (%v): HTTP says %q, RPC %q", o, err, detail, msg)
			}
		}
	}
}
