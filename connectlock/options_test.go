package connectlock_test

import (
	"testing"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/locktest"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The options every adapter shares are accepted or refused as in every
// other adapter (conformance.OptionCases), by both interceptors, each
// panicking with its own name in the message.
func TestSharedOptionCases(t *testing.T) {
	c := locktest.New(t).Client()
	for _, kind := range []string{"UnaryInterceptor", "StreamInterceptor"} {
		t.Run(kind, func(t *testing.T) {
			conformance.RunOptionCases(t, "connectlock: "+kind+": ", func(tc conformance.OptionCase) error {
				opts := []connectlock.Option{connectlock.Key(connectlock.Const("k")), connectlock.Wait(tc.Wait), connectlock.TTL(tc.TTL),
					connectlock.MaxHold(tc.MaxHold), connectlock.ReleaseTimeout(tc.ReleaseTimeout), connectlock.AcquireOptions(tc.AcquireOptions...)}
				if tc.NoWait {
					opts = append(opts, connectlock.NoWait())
				}
				opts = append(opts, conformance.KindOptions(tc, connectlock.Limit, connectlock.ReadSide, connectlock.WriteSide,
					func() connectlock.Option { return connectlock.Key(connectlock.Const("k2")) })...)
				client := c
				if tc.NoClient {
					client = nil
				}
				if kind == "UnaryInterceptor" {
					return conformance.Panic(func() { connectlock.UnaryInterceptor(client, opts...) })
				}
				return conformance.Panic(func() { connectlock.StreamInterceptor(client, opts...) })
			})
		})
	}
}
