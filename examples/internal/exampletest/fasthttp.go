package exampletest

import "go.uber.org/goleak"

// FasthttpGoroutines are the goroutines fasthttp (fiber's server) leaves
// behind, for goleak to ignore in the tests of a package that serves fiber:
// one refreshes its Date header for the process's life, and a stopped
// server's worker-pool cleaner sleeps out its idle period (10 s) before it
// sees the stop. Neither is the lock's or the example's.
var FasthttpGoroutines = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}
