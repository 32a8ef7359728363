package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// redisSource opens go-redis clients on REDIS_URL, or on an embedded
// miniredis when it is empty. Each replica gets its own client (its own
// connection pool), as separate processes would.
type redisSource struct {
	opts *redis.Options
	mini *miniredis.Miniredis
	desc string
}

func openRedis(url string) (*redisSource, error) {
	if url == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("embedded redis: %w", err)
		}
		return &redisSource{opts: &redis.Options{Addr: mr.Addr()}, mini: mr, desc: "embedded miniredis " + mr.Addr()}, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return &redisSource{opts: opts, desc: "REDIS_URL " + opts.Addr}, nil
}

// client returns a new go-redis client. ContextTimeoutEnabled lets a
// context deadline bound socket I/O, which lockkit requires.
func (s *redisSource) client() *redis.Client {
	o := *s.opts
	o.ContextTimeoutEnabled = true
	return redis.NewClient(&o)
}

func (s *redisSource) close() {
	if s.mini != nil {
		s.mini.Close()
	}
}
