package corehook

import (
	"context"
	"time"
)

// AcquireSettings reports which of the settings an adapter owns the given
// acquire options set: the wait budget (Wait), NoWait, the TTL and the
// telemetry name. opts is a []core.AcquireOption. The adapters reject
// options that set these through their AcquireOptions escape hatch, since
// each adapter has its own option for them and a silent override would
// make the same option mean two things.
var AcquireSettings func(opts any) (wait, noWait, ttl, name bool)

// Unlocked tells client's Observer that a fail-open adapter runs a handler
// without the lock because the acquire of key failed with err (Redis
// unavailable): Observer.Unlocked with the key, the telemetry name and a
// start of now. client is a *core.Client. Only adapters report this, so it
// is not a method users see.
var Unlocked func(ctx context.Context, client any, key, name string, err error)

// Settings are the acquire settings an adapter owns, as values.
type Settings struct {
	Name   string        // telemetry name
	Wait   time.Duration // wait budget (0: until ctx ends)
	NoWait bool
	TTL    time.Duration // 0: the Client's
	Kind   Kind          // what to take (the zero value: a mutex)
	Limit  int           // a semaphore's permits (Kind Semaphore)
}

// Kind is what an adapter takes on a key.
type Kind uint8

// Kinds of lock an adapter takes.
const (
	Mutex     Kind = iota // Client.Acquire
	Semaphore             // a permit of Client.Semaphore(key, Limit)
	Read                  // Client.RWLock(key).RLock
	Write                 // Client.RWLock(key).Lock
)

// AcquireAll is client.AcquireAll(ctx, keys, opts...) with s applied
// before opts; the lease is a *core.MultiLease, nil on error. s.Kind must
// be Mutex.
var AcquireAll func(ctx context.Context, client any, keys []string, s Settings, opts any) (lease any, err error)

// Acquire is client.Acquire(ctx, key, opts...) with s applied before opts
// (a []core.AcquireOption, or nil); the lease is a *core.Lease, nil on
// error. Settings as values cost a request no option closures.
var Acquire func(ctx context.Context, client any, key string, s Settings, opts any) (lease any, err error)
