package adapt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Check itself on the shared cases; every adapter runs them through its own
// constructor too.
func TestCheck(t *testing.T) {
	c := &core.Client{} // never used: Check only looks at the fields
	for _, tc := range OptionCases {
		cfg := Config{Client: c, Wait: tc.Wait, NoWait: tc.NoWait, TTL: tc.TTL, ReleaseTimeout: tc.ReleaseTimeout, Options: tc.AcquireOptions,
			Limit: tc.Limit, RW: tc.RW, Keys: tc.Keys}
		if tc.NoClient {
			cfg.Client = nil
		}
		err := cfg.Check()
		switch {
		case tc.Err == "" && err != nil:
			t.Errorf("%s: %v", tc.Name, err)
		case tc.Err != "" && (!errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.Err)):
			t.Errorf("%s: %v, want ErrInvalidOption mentioning %q", tc.Name, err, tc.Err)
		}
	}
}

func TestRetryHint(t *testing.T) {
	for _, tc := range []struct {
		f    func(error) time.Duration
		want time.Duration
	}{
		{nil, time.Second},
		{func(error) time.Duration { return 1500 * time.Millisecond }, 1500 * time.Millisecond},
		{func(error) time.Duration { return -time.Second }, 0},
	} {
		if got := RetryHint(tc.f, nil); got != tc.want {
			t.Errorf("RetryHint = %v, want %v", got, tc.want)
		}
	}
}
