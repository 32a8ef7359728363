package httplock_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The options every adapter shares are accepted or refused as in every
// other adapter (conformance.OptionCases).
func TestSharedOptionCases(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := core.New(rdb) // no I/O: only construction is tested
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	conformance.RunOptionCases(t, "httplock: New: ", func(tc conformance.OptionCase) error {
		opts := []httplock.Option{httplock.Key(httplock.Const("k")), httplock.Wait(tc.Wait), httplock.TTL(tc.TTL), httplock.MaxHold(tc.MaxHold),
			httplock.ReleaseTimeout(tc.ReleaseTimeout), httplock.AcquireOptions(tc.AcquireOptions...)}
		if tc.NoWait {
			opts = append(opts, httplock.NoWait())
		}
		opts = append(opts, conformance.KindOptions(tc, httplock.Limit, httplock.ReadSide, httplock.WriteSide, func() httplock.Option { return httplock.Key(httplock.Const("k2")) })...)
		client := c
		if tc.NoClient {
			client = nil
		}
		return conformance.Panic(func() { httplock.New(client, opts...) })
	})
}

// Without a key source, or with an empty one, New panics; an empty literal
// part panics where it is written.
func TestNewPanicsWithoutAKey(t *testing.T) {
	for name, f := range map[string]func(){
		"no Key":      func() { httplock.New(&core.Client{}) },
		"empty Key":   func() { httplock.New(&core.Client{}, httplock.Key()) },
		"empty Const": func() { httplock.Const("") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
