// Package ordershttp is what the HTTP front ends of the orders service
// share: the Config their NewRouter takes (ordersgin, ordersecho,
// ordersfiber), the routes they all serve, and Command, the main of
// examples/gin and examples/echo. The demo runs the same routers as its
// gin, echo and fiber replicas, so what the examples show is what the demo
// measures.
//
// The routes, the same on every front end, are Routes: each front end
// registers them from that table, building each route's lock from it, and
// Banner (which the examples print at startup) describes them from it.
// Run `go -C examples run ./gin` to see them.
//
// The order routes send the lock's fencing token back in the
// Lock-Token header, and every write carries it into the book, which
// refuses a token older than the last. A 409 from the lock carries
// Retry-After; a 409 from the order's rules (refund above the balance,
// already shipped) does not. An amount that is not a positive int64 of
// cents, or that would overflow the order's balance, is a 400. A payment
// carrying an Idempotency-Key runs once (Route.Idempotency): a retry, on
// any front end, gets the first answer with Idempotent-Replayed: true, or
// 409 + Retry-After while the first still runs.
package ordershttp

import (
	"context"
	"io"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/otelsetup"
	"github.com/lockkit/lockkit/guard"
)

// Config is what an HTTP front end's NewRouter needs.
type Config struct {
	Client *core.Client // the lock service (required unless NoLock)
	Book   orders.Book  // the order book (the shared database)
	// Wait is the wait budget of pay, refund and export (0: the lock
	// adapter's default, 10s). Ship never waits.
	Wait time.Duration
	// NoLock leaves the lock out: the baseline that shows what it prevents
	// (and the benchmark's).
	NoLock bool
	// NoIdempotency leaves the Idempotent routes' idempotency out (it
	// stays under NoLock, which removes locks only): the baseline that
	// shows a retried payment applied twice. Without a Client there is
	// none either.
	NoIdempotency bool
	// Log receives the access log (nil: none).
	Log io.Writer
	// Telemetry, when on, makes every request a server span named for its
	// route ("POST /orders/:id/pay", with http.route), under which the lock
	// middleware starts lock.acquire and lock.hold (with otellock on the
	// lock Client), and records the HTTP server metrics.
	Telemetry otelsetup.Instruments
}

// ExportLimit is how many exports of one tenant run at once (the
// semaphore in front of /tenant/export).
const ExportLimit = 2

// Header names of the routes.
const (
	TokenHeader  = "Lock-Token" // the fencing token of the lock a write ran under
	TenantHeader = "X-Tenant"   // the tenant of /tenant/export and /tenant/settings, in their lock keys
	// IdempotencyHeader carries a payment's idempotency key: the
	// adapters' default header.
	IdempotencyHeader = guard.DefaultIdempotencyHeader
)

// Idempotent reports whether route r runs under idempotency with cfg.
func (cfg Config) Idempotent(r Route) bool {
	return r.Idempotency != nil && !cfg.NoIdempotency && cfg.Client != nil
}

// LockToken is the fencing token of the innermost lock the request holds,
// 0 when it holds none (-nolock). An idempotency claim is a lease too, but
// its token orders the runs of one key, not the writers of an order: it is
// not a lock's token, and a write never carries it.
func LockToken(ctx context.Context) int64 {
	l, ok := core.LeaseFromContext(ctx)
	if !ok {
		return 0
	}
	if c, ok := core.ClaimFromContext(ctx); ok && c == l {
		return 0
	}
	return l.Token()
}

// TokenOf is the fencing token of the lock on core.JoinKey(parts...) that
// the request holds: one of the keys a route locks together (a transfer's
// two orders), or its only key; 0 when it holds none (-nolock).
func TokenOf(ctx context.Context, parts ...string) int64 {
	key, err := core.JoinKey(parts...)
	if err != nil {
		return 0
	}
	if m, ok := core.MultiLeaseFromContext(ctx); ok {
		if l := m.Lease(key); l != nil {
			return l.Token()
		}
		return 0
	}
	if l, ok := core.LeaseFromContext(ctx); ok && l.Key() == key {
		return l.Token()
	}
	return 0
}
