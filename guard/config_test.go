package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Check itself on the shared cases; every adapter runs them through its own
// constructor too.
func TestCheck(t *testing.T) {
	c := &core.Client{} // never used: Check only looks at the fields
	key := guard.Join(guard.Const[req]("k"))
	for _, tc := range conformance.OptionCases {
		cfg := guard.Config[req]{Client: c, ReleaseTimeout: tc.ReleaseTimeout, AcquireOptions: tc.AcquireOptions,
			Request: core.Request{Wait: tc.Wait, NoWait: tc.NoWait, TTL: tc.TTL, MaxHold: tc.MaxHold, Limit: tc.Limit, Side: tc.Side}}
		if tc.NoClient {
			cfg.Client = nil
		}
		for _, s := range []core.Side{tc.Side, tc.AlsoSide} {
			if s != 0 {
				cfg.SetSide(s)
			}
		}
		for range max(tc.Keys, 1) {
			cfg.Keys = append(cfg.Keys, key)
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

// The key sources: none, an empty Join, a route key beside another.
func TestCheckKeySources(t *testing.T) {
	c := &core.Client{}
	route := guard.RouteKey[req](mapReader{})
	for _, tc := range []struct {
		name string
		keys []guard.Key[req]
		msg  string
	}{
		{"no key", nil, "no key source"},
		{"empty Join", []guard.Key[req]{guard.Join[req]()}, "at least one part"},
		{"route and another", []guard.Key[req]{route, guard.Join(guard.Const[req]("k"))}, "more than one key source"},
		{"zero key", []guard.Key[req]{{}}, "has no source"},
	} {
		if err := (guard.Config[req]{Client: c, Keys: tc.keys}).Check(); !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrInvalidOption mentioning %q", tc.name, err, tc.msg)
		}
	}
	if err := (guard.Config[req]{Client: c, Keys: []guard.Key[req]{route}}).Check(); err != nil {
		t.Errorf("a route key alone: %v", err)
	}
}

func TestRetryHint(t *testing.T) {
	c := &core.Client{}
	for _, tc := range []struct {
		f    func(error) time.Duration
		want time.Duration
	}{
		{nil, time.Second},
		{func(error) time.Duration { return 1500 * time.Millisecond }, 1500 * time.Millisecond},
		{func(error) time.Duration { return -time.Second }, 0},
	} {
		p, err := guard.New(guard.Config[req]{Client: c, Keys: []guard.Key[req]{guard.Join(guard.Const[req]("k"))}, RetryAfter: tc.f})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.RetryHint(nil); got != tc.want {
			t.Errorf("RetryHint = %v, want %v", got, tc.want)
		}
	}
}

// A misconfiguration is told once per route name, and the names remembered
// are bounded: a router that passes any name (gRPC's unknown-service
// handler) cannot grow the table.
func TestMisconfiguredToldOncePerRoute(t *testing.T) {
	told := map[string]int{}
	p, err := guard.New(guard.Config[req]{
		Client:        &core.Client{},
		Keys:          []guard.Key[req]{guard.KeyFunc(func(req) (string, error) { return "", core.ErrKeyConfig })},
		Misconfigured: func(_ req, name string, _ error) { told[name]++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for i := range 5000 {
			if h := p.Acquire(context.Background(), nil, fmt.Sprint("/route/", i), "GET"); h.Outcome != core.OutcomeMisconfigured {
				t.Fatalf("outcome %v", h.Outcome)
			}
		}
	}
	if n := len(told); n != 4096 {
		t.Errorf("%d routes told, want the bound, 4096", n)
	}
	for name, n := range told {
		if n != 1 {
			t.Fatalf("%s told %d times", name, n)
		}
	}
}
