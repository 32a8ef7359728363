package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Classify is the one taxonomy: key mistakes first, then the caller's own
// context, then what was seen (held, a misuse, a closed Client), and
// anything else from Redis is Unavailable.
func TestClassify(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	late, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want core.Outcome
	}{
		{live, nil, core.OutcomeAcquired},
		{live, &core.NotAcquiredError{Key: "k"}, core.OutcomeContended},
		{live, fmt.Errorf("x: %w", core.ErrUnavailable), core.OutcomeUnavailable},
		{live, core.ErrClosed, core.OutcomeClosed},
		{live, &core.KeyPartError{Source: "header", Name: "X-Tenant", Reason: "missing"}, core.OutcomeBadKey},
		{live, core.ErrKeyConfig, core.OutcomeMisconfigured},
		{live, core.ErrInvalidOption, core.OutcomeMisconfigured},
		{live, core.ErrWouldDeadlock, core.OutcomeMisconfigured},
		{gone, fmt.Errorf("w: %w", context.Canceled), core.OutcomeCanceled},
		{gone, &core.NotAcquiredError{}, core.OutcomeCanceled},
		{late, fmt.Errorf("w: %w", context.DeadlineExceeded), core.OutcomeDeadline},
		{gone, core.ErrInvalidKey, core.OutcomeBadKey},
		{nil, core.ErrClosed, core.OutcomeClosed},
	} {
		if got := core.Classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	for o, want := range map[core.Outcome]bool{core.OutcomeContended: true, core.OutcomeTimeout: true, core.OutcomeUnavailable: false, core.OutcomeClosed: false} {
		if o.NotAcquired() != want {
			t.Errorf("%v.NotAcquired() = %v", o, !want)
		}
	}
}
