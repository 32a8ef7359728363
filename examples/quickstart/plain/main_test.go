package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/quickstart/internal/quicktest"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// settle: two settlements of invoice 42 take turns, and one that does not
// wait meanwhile is refused with core.ErrNotAcquired.
func TestOneInvoiceAtATime(t *testing.T) {
	srv := locktest.New(t)
	locks := srv.Client()
	g := quicktest.NewGate(t)
	quicktest.Run(t, locks, g, quicktest.Calls{
		Pay: func(ctx context.Context) (int64, error) {
			return settle(ctx, locks, "42", g.Work, core.Wait(10*time.Second))
		},
		Refused: func(ctx context.Context) error {
			if _, err := settle(ctx, locks, "42", g.Work, core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
				return fmt.Errorf("settle with NoWait: %v, want core.ErrNotAcquired", err)
			}
			return nil
		},
	})
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }
