package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// openRedis connects to url (redis://...) or, when url is empty, starts an
// embedded miniredis so the example runs with nothing installed. cleanup
// releases what it opened.
func openRedis(url string) (rdb *redis.Client, desc string, cleanup func(), err error) {
	if url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opts.ContextTimeoutEnabled = true // lockkit needs deadlines to bound Redis I/O
		rdb = redis.NewClient(opts)
		return rdb, "redis at " + opts.Addr, func() { _ = rdb.Close() }, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("embedded miniredis: %w", err)
	}
	// miniredis keeps its own clock: advance it with the real one, so lock
	// TTLs expire in real time (a crashed holder's lock goes away).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			case <-stop:
				return
			}
		}
	})
	rdb = redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, "embedded miniredis (set REDIS_URL to use a real Redis)", func() {
		_ = rdb.Close()
		close(stop)
		wg.Wait()
		m.Close()
	}, nil
}
