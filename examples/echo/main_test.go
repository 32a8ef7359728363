package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example on a real Redis (REDIS_URL): see exampletest.OrdersService.
func TestOrdersService(t *testing.T) {
	srv := redistest.Start(t)
	exampletest.OrdersService(t, exampletest.Start(t, run, map[string]string{"REDIS_URL": "redis://" + srv.Addr()}, "-work", "5ms"))
}

// With REDIS_URL unset the example runs on its embedded miniredis.
func TestEmbeddedRedis(t *testing.T) {
	exampletest.Embedded(t, exampletest.Start(t, run, nil, "-work", "0"))
}
