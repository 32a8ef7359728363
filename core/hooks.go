package core

// testHooks lets the engine's own tests inject faults at points no external
// action can reach (the renewal goroutine frozen as by a GC pause, right
// before it picks up a batch). The zero value does nothing.
type testHooks struct {
	beforeRenewFn func()
	// renewBatchFn learns how many leases a renewal batch really sends,
	// after those past their deadline were dropped.
	renewBatchFn func(n int)
	// tickFn runs each time the renewal scheduler wakes to look at its
	// leases.
	tickFn func()
}

func (h testHooks) tick() {
	if h.tickFn != nil {
		h.tickFn()
	}
}

func (h testHooks) renewBatch(n int) {
	if h.renewBatchFn != nil {
		h.renewBatchFn(n)
	}
}

func (h testHooks) beforeRenew() {
	if h.beforeRenewFn != nil {
		h.beforeRenewFn()
	}
}

// withHooks installs test hooks (tests of package core only).
func withHooks(h testHooks) Option { return func(c *config) { c.hooks = h } }
