package core

// testHooks lets the engine's own tests inject faults at points no external
// action can reach (a pause between deciding to renew and sending it). The
// zero value does nothing.
type testHooks struct {
	beforeRenewFn func()
}

func (h testHooks) beforeRenew() {
	if h.beforeRenewFn != nil {
		h.beforeRenewFn()
	}
}
