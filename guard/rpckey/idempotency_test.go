package rpckey_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// idemConfig is a valid configuration on a test call type (its metadata).
func idemConfig(t *testing.T) rpckey.IdempotencyConfig[map[string]string] {
	values := func(r map[string]string, name string) []string {
		if v, ok := r[name]; ok {
			return []string{v}
		}
		return nil
	}
	fail := func(guard.Code, string, time.Duration) error { return errors.New("answer") }
	return rpckey.IdempotencyConfig[map[string]string]{
		Client: testkit.Client(t, redistest.Start(t).NewClient()),
		Key:    rpckey.Metadata(rpckey.DefaultIdempotencyMetadata, values, true),
		Msg:    func(map[string]string) any { return nil }, Values: values,
		Wire: rpckey.Wire{Answer: func(context.Context, *guard.Rejection) error { return errors.New("answer") },
			Code: func(error) (guard.Code, bool) { return 0, false }, Details: func(error) []any { return nil }, Error: fail},
	}
}

// A streaming method, a cookie replayed or a bad retention are refused at
// construction, each named, the error matching core.ErrInvalidOption.
func TestNewIdempotencyRefuses(t *testing.T) {
	if _, err := rpckey.NewIdempotency(idemConfig(t)); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	for want, change := range map[string]func(*rpckey.IdempotencyConfig[map[string]string]){
		"streaming":   func(c *rpckey.IdempotencyConfig[map[string]string]) { c.Stream = true },
		"Set-Cookie":  func(c *rpckey.IdempotencyConfig[map[string]string]) { c.ReplayMetadata = []string{"set-cookie"} },
		"Retention":   func(c *rpckey.IdempotencyConfig[map[string]string]) { c.Retention = time.Millisecond },
		"key source":  func(c *rpckey.IdempotencyConfig[map[string]string]) { c.Key = guard.Part[map[string]string]{} },
		"Wire":        func(c *rpckey.IdempotencyConfig[map[string]string]) { c.Wire.Error = nil },
		"core.Client": func(c *rpckey.IdempotencyConfig[map[string]string]) { c.Client = nil },
	} {
		c := idemConfig(t)
		change(&c)
		_, err := rpckey.NewIdempotency(c)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, core.ErrInvalidOption) {
			t.Errorf("%s: %v, want an ErrInvalidOption naming it", want, err)
		}
	}
}
