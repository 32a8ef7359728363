package fiberlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// fasthttp keeps a goroutine that refreshes its Date header for the
// process's life, and a stopped server's worker-pool cleaner sleeps out its
// idle period (10 s) before it sees the stop: neither is the lock's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}
