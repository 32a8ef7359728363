package fiberlock_test

import (
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The option values every adapter accepts or refuses, with the same
// message, through New.
func TestOptionCases(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	conformance.RunOptionCases(t, "fiberlock: New: ", func(tc conformance.OptionCase) error {
		opts := []fiberlock.Option{fiberlock.Key(fiberlock.Const("k")), fiberlock.Wait(tc.Wait), fiberlock.TTL(tc.TTL),
			fiberlock.MaxHold(tc.MaxHold), fiberlock.ReleaseTimeout(tc.ReleaseTimeout), fiberlock.AcquireOptions(tc.AcquireOptions...)}
		if tc.NoWait {
			opts = append(opts, fiberlock.NoWait())
		}
		opts = append(opts, conformance.KindOptions(tc, fiberlock.Limit, fiberlock.ReadSide, fiberlock.WriteSide, func() fiberlock.Option { return fiberlock.Key(fiberlock.Const("k2")) })...)
		client := c
		if tc.NoClient {
			client = (*core.Client)(nil)
		}
		return conformance.Panic(func() { fiberlock.New(client, opts...) })
	})
}
