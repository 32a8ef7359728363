package ordershttp

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Route is one route of the orders API and the lock in front of it.
// Routes is the one table of them: every HTTP front end registers its
// routes from it (building each lock from Lock) and Banner describes them
// from it, so a route cannot be served with one lock and announced with
// another.
type Route struct {
	Method string
	Path   string // in gin's, echo's and fiber's syntax: /orders/:id/pay
	Op     Op     // what serves it
	Lock   *Lock  // nil: no lock
	// Idempotency, when not nil, runs a request carrying an
	// Idempotency-Key once, in front of the lock: its retries, on any HTTP
	// front end, get its stored answer (Idempotent-Replayed: true) and
	// take no lock.
	Idempotency *Idempotency
}

// Idempotency is the idempotency in front of a route.
type Idempotency struct {
	// Scope is added to the record's key: a key sent for another order
	// is another record. The record's key already names the method and
	// the route's template, not its parameters.
	Scope Key
}

// Op is what a route does to the book; each front end has one handler per
// Op.
type Op int

// The operations of the orders API.
const (
	OpGet         Op = iota // read an order
	OpPay                   // ?amount=N
	OpRefund                // ?amount=N
	OpShip                  // ship once
	OpTransfer              // ?amount=N from :id to :to
	OpExport                // a tenant's export
	OpSettings              // read a tenant's settings
	OpSetSettings           // ?plan=P
)

// Lock is the lock in front of a route, in words every adapter has.
type Lock struct {
	// Kind is core.KindMutex, core.KindSemaphore (Limit permits), or
	// core.KindRead or core.KindWrite (that side of a read/write lock).
	Kind  string
	Limit int
	// Keys is the key, or (mutexes only) several keys taken together, all
	// or nothing, in one canonical order whatever the request's.
	Keys []Key
	// NoWait answers at once when the lock is busy instead of waiting up
	// to Config.Wait.
	NoWait bool
	// Token sends the lease's fencing token back in TokenHeader.
	Token bool
}

// Key is a lock key: its parts joined by ':' (core.JoinKey), as every
// adapter joins them.
type Key []Part

// Part is one part of a key, read from the request.
type Part struct {
	From Source
	Name string // the constant; the path parameter's or the header's name
}

// Source is where a Part comes from. Its values are the sources of
// echo5lock's key specs ("const:order,param:id").
type Source string

// The sources of key parts.
const (
	Const  Source = "const"  // Name itself
	Param  Source = "param"  // the path parameter Name, decoded by one rule
	Header Source = "header" // the header Name (400 without it)
)

// The keys of the routes: "order:<id>" is also the key grpclock takes from
// a gRPC message's LockKey(), so gin, echo and gRPC replicas of one order
// exclude each other.
var (
	orderKey    = Key{{Const, "order"}, {Param, "id"}}
	toKey       = Key{{Const, "order"}, {Param, "to"}}
	exportKey   = Key{{Const, "export"}, {Header, TenantHeader}}
	settingsKey = Key{{Const, "settings"}, {Header, TenantHeader}}
)

// Routes are the orders API's routes, the same on every front end.
var Routes = []Route{
	// A payment is the request a client retries after a timeout: once per
	// Idempotency-Key.
	{"POST", "/orders/:id/pay", OpPay, &Lock{Kind: core.KindMutex, Keys: []Key{orderKey}, Token: true}, &Idempotency{Scope: Key{{Param, "id"}}}},
	{"POST", "/orders/:id/refund", OpRefund, &Lock{Kind: core.KindMutex, Keys: []Key{orderKey}, Token: true}, nil},
	// Shipping twice is the classic duplicate click: answer 409 at once
	// rather than queue behind the first.
	{"POST", "/orders/:id/ship", OpShip, &Lock{Kind: core.KindMutex, Keys: []Key{orderKey}, NoWait: true, Token: true}, nil},
	// A transfer locks both orders, all or nothing, in one order whatever
	// its direction: no deadlock between opposite transfers.
	{"POST", "/orders/:id/transfer/:to", OpTransfer, &Lock{Kind: core.KindMutex, Keys: []Key{orderKey, toKey}, Token: true}, nil},
	{"POST", "/tenant/export", OpExport, &Lock{Kind: core.KindSemaphore, Limit: ExportLimit, Keys: []Key{exportKey}}, nil},
	{"GET", "/tenant/settings", OpSettings, &Lock{Kind: core.KindRead, Keys: []Key{settingsKey}}, nil},
	{"PUT", "/tenant/settings", OpSetSettings, &Lock{Kind: core.KindWrite, Keys: []Key{settingsKey}}, nil},
	{"GET", "/orders/:id", OpGet, nil, nil},
}

// String is the key as the banner shows it: order:<id>, export:<X-Tenant>.
func (k Key) String() string {
	parts := make([]string, len(k))
	for i, p := range k {
		parts[i] = p.Name
		if p.From != Const {
			parts[i] = "<" + p.Name + ">"
		}
	}
	return strings.Join(parts, ":")
}

// Spec is the key as an echo5lock key spec: "const:order,param:id".
func (k Key) Spec() string {
	parts := make([]string, len(k))
	for i, p := range k {
		parts[i] = string(p.From) + ":" + p.Name
	}
	return strings.Join(parts, ",")
}

// String says what the lock takes and how a busy one is answered:
// "mutex order:<id>, wait (409 past it); fencing token in Lock-Token".
func (l Lock) String() string {
	held := make([]string, len(l.Keys))
	for i, k := range l.Keys {
		held[i] = l.Kind + " " + k.String()
	}
	s := strings.Join(held, " and ")
	if len(l.Keys) > 1 {
		s += " together"
	}
	switch l.Kind {
	case core.KindSemaphore:
		s += fmt.Sprintf(" (%d permits)", l.Limit)
	case core.KindRead:
		s += " (readers share)"
	case core.KindWrite:
		s += " (alone)"
	}
	busy := "409"
	if l.Kind == core.KindSemaphore {
		busy = "429"
	}
	if l.NoWait {
		s += ", no wait (" + busy + " at once when busy)"
	} else {
		s += ", wait (" + busy + " past it)"
	}
	switch {
	case l.Token && len(l.Keys) > 1:
		s += "; fencing tokens in " + TokenHeader + " (in the keys' canonical order)"
	case l.Token:
		s += "; fencing token in " + TokenHeader
	}
	return s
}

// Banner writes the routes and their locks, one line each, and what the
// placeholders are; noLock says the locks are off (-nolock).
func Banner(w io.Writer, noLock bool) {
	if noLock {
		fmt.Fprintln(w, "  WITHOUT the locks (-nolock); with them:")
	}
	method, path := 0, 0
	for _, r := range Routes {
		method, path = max(method, len(r.Method)), max(path, len(r.Path))
	}
	for _, r := range Routes {
		lock := "no lock"
		if r.Lock != nil {
			lock = r.Lock.String()
		}
		if r.Idempotency != nil {
			lock = "once per " + IdempotencyHeader + " and " + r.Idempotency.Scope.String() + ", then " + lock
		}
		fmt.Fprintf(w, "  %-*s %-*s  %s\n", method, r.Method, path, r.Path, lock)
	}
	fmt.Fprintf(w, "  (<id>, <to>: the path's; <%s>: the header's, 400 without it; a busy lock's answer has Retry-After)\n", TenantHeader)
	fmt.Fprintf(w, "  (a retry with the same %s gets the first answer with %s: true, or 409 + Retry-After while the first runs)\n",
		IdempotencyHeader, guard.HeaderIdempotentReplayed)
}
