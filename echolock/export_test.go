package echolock

import "sync"

var (
	builtMu sync.Mutex
	built   []*lockMiddleware
)

func init() {
	newHook = func(m *lockMiddleware) {
		builtMu.Lock()
		built = append(built, m)
		builtMu.Unlock()
	}
}

// RouteTemplates is how many route templates the route tables of every
// middleware built so far remember (tests only).
func RouteTemplates() int {
	builtMu.Lock()
	defer builtMu.Unlock()
	n := 0
	for _, m := range built {
		n += m.routes.Len()
	}
	return n
}
