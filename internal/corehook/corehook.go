// Package corehook holds what core shares with lockkit's own adapters and
// tests but not with users; core sets these in init. A variable left nil
// means core was not linked into the program.
//
// corehook imports nothing of lockkit, so core can import it without a
// cycle; its users import core (for the init) and corehook.
package corehook

// Tables returns the current size of each per-key table of a *core.Client,
// by name:
//
//	queues         local FIFO queues (holders, waiters, hand-off and yield state), one per key (and side) in use
//	waiters        callers queued in those queues, all keys together
//	subscriptions  release-notification channels known to the pub/sub hubs (all nodes under Redlock; shard channels on a cluster)
//	leases         leases scheduled for renewal
//	renewals       renewals handed to the renewal I/O goroutine and not yet sent
//
// Every table that a request can add to is listed, so a test can flood a
// Client and check that each one empties again. Tables only reads, under
// the tables' own locks, in time proportional to the number of hubs; it
// returns nil for anything but a non-nil *core.Client.
var Tables func(client any) map[string]int
