package keyspec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/adapt"
	"github.com/lockkit/lockkit/internal/keyspec"
)

func TestAnswerFor(t *testing.T) {
	three := func(error) time.Duration { return 2500 * time.Millisecond }
	for _, tc := range []struct {
		kind       adapt.Kind
		retryAfter func(error) time.Duration
		status     int
		ra         string
		body       bool
	}{
		{adapt.Contended, nil, 409, "1", true},
		{adapt.Contended, three, 409, "3", true},
		{adapt.Unavailable, nil, 503, "1", true},
		{adapt.Deadline, nil, 503, "1", true},
		{adapt.BadKey, nil, 400, "", true},
		{adapt.Misconfigured, nil, 500, "", true},
		{adapt.ClientGone, nil, keyspec.StatusClientClosedRequest, "", false},
	} {
		a := keyspec.AnswerFor(tc.kind, errors.New("x"), tc.retryAfter)
		if a.Status != tc.status || a.RetryAfter != tc.ra || (a.Problem != nil) != tc.body {
			t.Errorf("%v: %+v, want status %d Retry-After %q body %v", tc.kind, a, tc.status, tc.ra, tc.body)
		}
		if tc.body && (a.Problem.Status != tc.status || a.Message() == "") {
			t.Errorf("%v: problem %+v message %q", tc.kind, a.Problem, a.Message())
		}
	}
	// A 400 names the missing part; a 409 never shows the holder's metadata.
	kerr := &core.KeyPartError{Source: "header", Name: "X-Tenant", Reason: "missing or empty"}
	if m := keyspec.AnswerFor(adapt.BadKey, kerr, nil).Message(); m != kerr.Error() {
		t.Errorf("400 message %q", m)
	}
	nerr := &core.NotAcquiredError{Key: "order:1", Holder: core.Holder{Owner: "secret-host", Metadata: "trace"}}
	if m := keyspec.AnswerFor(adapt.Contended, nerr, nil).Message(); m == "" || strings.Contains(m, "secret-host") {
		t.Errorf("409 message %q", m)
	}
}

func TestCheck(t *testing.T) {
	c := &core.Client{} // never used: Check only looks at the fields
	for _, tc := range []struct {
		cfg adapt.Config
		ok  bool
	}{
		{adapt.Config{Client: c}, true},
		{adapt.Config{Client: c, Wait: time.Second, TTL: time.Second}, true},
		{adapt.Config{}, false},
		{adapt.Config{Client: c, Wait: -1}, false},
		{adapt.Config{Client: c, NoWait: true, Wait: time.Second}, false},
		{adapt.Config{Client: c, TTL: time.Millisecond}, false},
		{adapt.Config{Client: c, TTL: -time.Second}, false},
		{adapt.Config{Client: c, ReleaseTimeout: -1}, false},
	} {
		err := keyspec.Check(tc.cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, keyspec.ErrConfig)) {
			t.Errorf("Check(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}
