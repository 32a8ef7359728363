package core_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
)

// core.New refuses, with ErrInvalidOption and a message naming the option,
// every setting it could not honour; before, WithTTL(5) (5 ns) was accepted
// and every Acquire then failed.
func TestNewRefusesWhatItCannotHonour(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tc := range []struct {
		name string
		opts []core.Option
		msg  string
	}{
		{"5ns TTL", []core.Option{core.WithTTL(5)}, "TTL must be at least 10ms"},
		{"TTL just below MinTTL", []core.Option{core.WithTTL(core.MinTTL - 1)}, "TTL must be at least"},
		{"zero TTL", []core.Option{core.WithTTL(0)}, "TTL must be at least"},
		{"negative TTL", []core.Option{core.WithTTL(-time.Second)}, "TTL must be at least"},
		{"zero release timeout", []core.Option{core.WithReleaseTimeout(0)}, "WithReleaseTimeout must be > 0"},
		{"negative release timeout", []core.Option{core.WithReleaseTimeout(-time.Second)}, "WithReleaseTimeout must be > 0"},
		{"negative replicas", []core.Option{core.WithReplicaAck(-1, time.Second)}, "replicas ≥ 0"},
		{"replica ack without a timeout", []core.Option{core.WithReplicaAck(1, 0)}, "at least 1ms"},
		{"replica ack under a millisecond (WAIT 0 waits for ever)", []core.Option{core.WithReplicaAck(1, 500*time.Microsecond)}, "at least 1ms"},
		{"replica ack as long as the TTL", []core.Option{core.WithTTL(time.Second), core.WithReplicaAck(1, time.Second)}, "not below the TTL"},
		{"negative node timeout", []core.Option{core.WithNodeTimeout(-time.Second)}, "WithNodeTimeout must be > 0"},
		{"node timeout above TTL/10", []core.Option{core.WithTTL(time.Second), core.WithNodeTimeout(200 * time.Millisecond)}, "above TTL/10"},
		{"node timeout on a single primary", []core.Option{core.WithNodeTimeout(time.Millisecond)}, "for NewRedlock"},
		{"empty owner", []core.Option{core.WithOwner("")}, "empty owner"},
		{"owner over 256 bytes", []core.Option{core.WithOwner(strings.Repeat("o", 257))}, "longer than 256"},
		{"owner with a newline", []core.Option{core.WithOwner("a\nb")}, "control character"},
		{"empty prefix", []core.Option{core.WithPrefix("")}, ""},
		{"braced prefix", []core.Option{core.WithPrefix("{x}")}, ""},
	} {
		c, err := core.New(rdb, tc.opts...)
		if c != nil {
			_ = c.Close()
		}
		if !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: New = %v, want ErrInvalidOption mentioning %q", tc.name, err, tc.msg)
		}
	}
	c, err := core.New(rdb, core.WithTTL(core.MinTTL), core.WithReleaseTimeout(time.Millisecond), core.WithOwner("o"))
	if err != nil {
		t.Fatalf("the smallest values it honours: %v", err)
	}
	_ = c.Close()
}

// NewRedlock checks the same options the same way.
func TestNewRedlockRefusesWhatItCannotHonour(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, opts := range [][]core.Option{{core.WithTTL(5)}, {core.WithTTL(time.Second), core.WithNodeTimeout(time.Second)}} {
		if c, err := core.NewRedlock([]*redis.Client{rdb}, opts...); !errors.Is(err, core.ErrInvalidOption) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("NewRedlock = %v, want ErrInvalidOption", err)
		}
	}
}
