package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/otellock"
)

// lockSource is a source of every lockkit metric, exported by the OTel
// Prometheus exporter, independent of the demo: one lease is lost (its key
// flushed under it, so the renewal finds it gone), one handler is reported
// run unlocked, one NoWait acquire is refused, and then two lock Clients on
// a real redis-server contend for one key under a lock name until the test
// ends. It shows what the exporter names each of
// otellock's instruments, renewals, losses and fail-open runs included,
// which a healthy demo run never records.
type lockSource struct {
	reg  *prometheus.Registry
	addr string // host:port serving /metrics
}

// Names the source records under.
const (
	sourceName     = "POST /orders/:id/pay"
	sourceLostName = "orders.v1.Orders/ImportLines"
)

// startLockSource records every metric, then serves them on a loopback port
// under contention until the test ends.
func startLockSource(t *testing.T) *lockSource {
	t.Helper()
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs := otellock.New(otellock.WithMeterProvider(mp))
	// A lease's context ends just before its Observer hears of the loss:
	// the source waits for the event itself, after otellock has it.
	lostSeen := &lossSignal{ch: make(chan struct{})}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var clients []*core.Client
	for range 2 {
		rdb := srv.NewClient()
		c, err := core.New(rdb, core.WithObserver(core.Observers(obs, lostSeen)))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	}

	// A refused NoWait acquire while a lease holds the key.
	l, err := clients[0].Acquire(ctx, "order:2", core.Name(sourceName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].Acquire(ctx, "order:2", core.Name(sourceName), core.NoWait()); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("NoWait on a held key: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A loss: the key vanishes under a short lease; its renewal finds it
	// gone and ends the lease's context.
	lost, err := clients[0].Acquire(ctx, "order:3", core.Name(sourceLostName), core.TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lostSeen.ch:
	case <-ctx.Done():
		t.Fatal("the lease outlived its flushed key")
	}
	_ = lost.Release(ctx)

	// A fail-open run, as an adapter reports one when Redis is unavailable.
	obs.Unlocked(ctx, core.AcquireInfo{Key: "order:4", Name: sourceName, Strategy: "notify"}, core.ErrUnavailable)

	// Contention until the test ends: 4 callers per client on one key,
	// each holding it a moment.
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 8 {
		c := clients[i%2]
		wg.Go(func() {
			for bg.Err() == nil {
				l, err := c.Acquire(bg, "order:1", core.Name(sourceName), core.Wait(5*time.Second))
				if err != nil {
					if bg.Err() == nil {
						t.Errorf("acquire: %v", err)
					}
					return
				}
				time.Sleep(time.Millisecond) // the critical section's work
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(lis) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return &lockSource{reg: reg, addr: lis.Addr().String()}
}

// lossSignal closes ch at the first Lost event it is told of.
type lossSignal struct {
	core.NopObserver
	once sync.Once
	ch   chan struct{}
}

func (s *lossSignal) Lost(context.Context, core.LeaseInfo, error) {
	s.once.Do(func() { close(s.ch) })
}
