package otellock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

type markKey string

// markObserver puts a mark in the contexts AcquireStart and AcquireEnd
// return, and records whether its later events find them.
type markObserver struct {
	core.NopObserver
	endSawStart, relSawStart, relSawEnd bool
}

func (m *markObserver) AcquireStart(ctx context.Context, _ core.AcquireInfo) context.Context {
	return context.WithValue(ctx, markKey("start"), true)
}

func (m *markObserver) AcquireEnd(ctx context.Context, _ core.AcquireInfo, _ core.AcquireResult) context.Context {
	m.endSawStart = ctx.Value(markKey("start")) != nil
	return context.WithValue(ctx, markKey("end"), true)
}

func (m *markObserver) Released(ctx context.Context, _ core.LeaseInfo, _ error) {
	m.relSawStart = ctx.Value(markKey("start")) != nil
	m.relSawEnd = ctx.Value(markKey("end")) != nil
}

// Beside another Observer (core.Observers), in either order, otellock
// keeps what the other put in the acquire's context: the other finds its
// marks in its later acquire and lease events.
func TestObserversKeepOtherObserversContext(t *testing.T) {
	srv := redistest.Start(t)
	for _, otelFirst := range []bool{true, false} {
		tel := newTelemetry(t)
		m := &markObserver{}
		obs := core.Observers(m, tel.obs)
		if otelFirst {
			obs = core.Observers(tel.obs, m)
		}
		c := newClient(t, srv, core.WithObserver(obs))
		ctx, span := tel.request(testkit.Context(t, 10*time.Second), "req")
		l, err := c.Acquire(ctx, "observers:ctx")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		span.End()
		if !m.endSawStart || !m.relSawStart || !m.relSawEnd {
			t.Errorf("otellock first=%v: AcquireEnd saw start %v; Released saw start %v, end %v", otelFirst, m.endSawStart, m.relSawStart, m.relSawEnd)
		}
	}
}
