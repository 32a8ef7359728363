package otellock

import (
	"context"
	"errors"

	"github.com/lockkit/lockkit/core"
	"go.opentelemetry.io/otel/attribute"
)

// Attribute keys. Spans carry all of them; metrics carry only AttrName,
// AttrKind, AttrOutcome and AttrErrorType, so their cardinality is the
// number of lock names (route templates, RPC methods) times a few kinds
// and outcomes, never the number of keys.
const (
	// AttrName is the low-cardinality lock name (core.Name: route template, RPC method).
	AttrName = attribute.Key("lockkit.lock.name")
	// AttrKey is the lock key, recorded per WithKeyAttribute (spans only).
	AttrKey = attribute.Key("lockkit.lock.key")
	// AttrOutcome is how an acquire ended (acquired, contended, timeout,
	// canceled, error; for a claim of an idempotency record also replayed,
	// its answer found, and mismatch, the key used for another request) or
	// how a renewal went (ok, lost, error).
	AttrOutcome = attribute.Key("lockkit.lock.outcome")
	// AttrAttempts is the number of Redis attempts an acquire made itself
	// (core.AcquireResult.Attempts): 0 when it was refused locally, or
	// handed the lock (AttrHandoff) before its turn to ask Redis came.
	AttrAttempts = attribute.Key("lockkit.lock.attempts")
	// AttrHandoff is true on a lock.acquire whose lock was handed over by a
	// releasing lease of the same Client (core.AcquireResult.Handoff), in
	// the script that released it; absent otherwise.
	AttrHandoff = attribute.Key("lockkit.lock.handoff")
	// AttrTakenOver is true on a lock.acquire of kind claim that took the
	// record over from a claim whose owner crashed or stalled past its TTL
	// without an answer (core.AcquireResult.TakenOver): the work may have
	// begun before; absent otherwise. MetricTakeovers counts them.
	AttrTakenOver = attribute.Key("lockkit.lock.taken_over")
	// AttrOwner is the acquiring Client's owner id (core.WithOwner), on
	// lock.acquire and lock.hold: it tells replicas apart.
	AttrOwner = attribute.Key("lockkit.lock.owner")
	// AttrFencingToken is the fencing token of the acquired lease.
	AttrFencingToken = attribute.Key("lockkit.lock.fencing_token")
	// AttrKind is what the lease is (core.AcquireInfo.Kind): mutex,
	// semaphore, read or write (the sides of a read/write lock), or claim
	// (an idempotency record, core.Client.Claim), on
	// lock.acquire, lock.hold and every metric.
	AttrKind = attribute.Key("lockkit.lock.kind")
	// AttrLimit is a semaphore's number of permits, on its lock.acquire.
	AttrLimit = attribute.Key("lockkit.lock.limit")
	// AttrWaitStrategy is how the caller waited: notify, nowait or try.
	AttrWaitStrategy = attribute.Key("lockkit.lock.wait.strategy")
	// AttrAttempt numbers the Redis attempt of this acquire that first met
	// the holder (lock.contended events); 0 when the holder was met through
	// the Client's local queue (core.Observer.Contended).
	AttrAttempt = attribute.Key("lockkit.lock.attempt")
	// AttrHolderOwner is the holder's owner id (core.WithOwner), on
	// lock.contended events and holder links.
	AttrHolderOwner = attribute.Key("lockkit.lock.holder.owner")
	// AttrHolderFencingToken is the holder's fencing token, on lock.contended
	// events and holder links.
	AttrHolderFencingToken = attribute.Key("lockkit.lock.holder.fencing_token")
	// AttrErrorType is the OpenTelemetry semantic-convention error.type: a
	// short, low-cardinality class of failure (see the package doc).
	AttrErrorType = attribute.Key("error.type")
)

// Renewal outcomes (AttrOutcome on lockkit.lock.renewals and lock.renewed events).
const (
	RenewOK    = "ok"    // the server confirmed the renewal
	RenewLost  = "lost"  // another owner holds the lock, or it is gone: the lease is lost
	RenewError = "error" // Redis did not answer; retried until the lease's deadline
)

// errorType classifies an engine error as a low-cardinality error.type:
// the name of its core.Outcome (the one taxonomy every adapter answers by;
// a closed Client is "closed"), or, for what ends a lease rather than an
// acquire, lost or not_held.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, core.ErrLost):
		return "lost"
	case errors.Is(err, core.ErrNotHeld):
		return "not_held"
	}
	switch o := core.Classify(nil, err); o {
	case core.OutcomeUnavailable:
		// Classify's catch-all: say so only for what is Redis's.
		if !errors.Is(err, core.ErrUnavailable) {
			if errors.Is(err, context.Canceled) {
				return core.OutcomeCanceled.String()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return core.OutcomeDeadline.String()
			}
			return "_OTHER" // the semantic conventions' fallback value
		}
		return o.String()
	default:
		return o.String()
	}
}

// HashKey is the value of lockkit.lock.key in the default KeyHashed mode:
// the first 8 bytes of the key's SHA-256, in hex (core.HashKey, which
// lockview shows too). Compute it for a key to find that key's spans.
func HashKey(key string) string { return core.HashKey(key) }

func (c *config) keyAttr(key string) (attribute.KeyValue, bool) {
	switch c.keyMode {
	case KeyHashed:
		return AttrKey.String(HashKey(key)), true
	case KeyRaw:
		return AttrKey.String(key), true
	}
	return attribute.KeyValue{}, false
}
