package adapt

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

func TestClassify(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	late, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want Kind
	}{
		{live, nil, Acquired},
		{live, &core.NotAcquiredError{Key: "k"}, Contended},
		{live, fmt.Errorf("x: %w", core.ErrUnavailable), Unavailable},
		{live, core.ErrClosed, Unavailable},
		{live, &core.KeyPartError{Source: "header", Name: "X-Tenant", Reason: "missing"}, BadKey},
		{live, core.ErrInvalidOption, Misconfigured},
		{live, core.ErrWouldDeadlock, Misconfigured},
		{gone, fmt.Errorf("w: %w", context.Canceled), ClientGone},
		{gone, &core.NotAcquiredError{}, ClientGone},
		{late, fmt.Errorf("w: %w", context.DeadlineExceeded), Deadline},
		{gone, core.ErrInvalidKey, BadKey},
	} {
		if got := Classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	if d := RetryAfter(nil, nil); d != time.Second {
		t.Fatal(d)
	}
	if d := RetryAfter(func(error) time.Duration { return 1500 * time.Millisecond }, nil); d != 2*time.Second {
		t.Fatal(d)
	}
	if d := RetryAfter(func(error) time.Duration { return 0 }, nil); d != time.Second {
		t.Fatal(d)
	}
}
