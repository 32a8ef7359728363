package grpclock_test

import (
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/corehook"
)

// tablesOf reports the Client's per-key tables (queues, subscriptions,
// leases, renewals).
func tablesOf(c *core.Client) map[string]int { return corehook.Tables(c) }
