package ordersgin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkPayRoute sends 1000 requests at concurrency 100 per iteration to
// the router's POST /orders/:id/pay over loopback HTTP, with the lock
// (real redis-server) and without it, for one hot order (every request
// waits for the previous one) and for 1000 different orders (no waiting:
// the lock's own cost). The store's work is 0, so the handler itself is
// nearly free and the numbers show the lock's cost. Reported as req/s.
//
//	go test -run XXX -bench PayRoute ./examples/internal/ordersgin
func BenchmarkPayRoute(b *testing.B) {
	const requests, concurrency = 1000, 100
	srv := redistest.Start(b)
	for _, locked := range []bool{true, false} {
		for _, orderSpread := range []int{1, requests} {
			name := fmt.Sprintf("lock=%v/orders=%d", locked, orderSpread)
			b.Run(name, func(b *testing.B) {
				client, err := core.New(srv.NewClient(func(o *redis.Options) { o.PoolSize = 2 * concurrency }))
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				hs := httptest.NewServer(NewRouter(Config{Client: client, Book: orders.NewStore(0), NoLock: !locked}))
				defer hs.Close()
				tr := &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}
				defer tr.CloseIdleConnections()
				hc := &http.Client{Transport: tr}
				var failed sync.Map
				b.ResetTimer()
				for range b.N {
					var wg sync.WaitGroup
					for w := range concurrency {
						wg.Go(func() {
							for i := w; i < requests; i += concurrency {
								res, err := hc.Post(fmt.Sprintf("%s/orders/%d/pay", hs.URL, i%orderSpread), "", nil)
								if err != nil {
									failed.Store(err.Error(), true)
									continue
								}
								_, _ = io.Copy(io.Discard, res.Body)
								res.Body.Close()
								if res.StatusCode != http.StatusOK {
									failed.Store(res.Status, true)
								}
							}
						})
					}
					wg.Wait()
				}
				b.StopTimer()
				b.ReportMetric(float64(requests*b.N)/b.Elapsed().Seconds(), "req/s")
				failed.Range(func(k, _ any) bool { b.Errorf("request failed: %v", k); return true })
			})
		}
	}
}
