package core

import (
	"context"
	"time"
)

// Observer receives the engine's events; otellock implements it with spans and
// metrics, so core itself stays free of OpenTelemetry.
//
// Methods are called on the acquire path and from the Client's renewal
// goroutine: they must be cheap and must never block. Embed NopObserver in an
// implementation to stay source-compatible when events are added.
type Observer interface {
	// AcquireStart is called when Acquire or TryAcquire begins. The context
	// it returns is the one the other acquire events receive (a span, say).
	AcquireStart(ctx context.Context, a AcquireInfo) context.Context
	// HolderMetadata returns the short string stored next to the lock if this
	// acquire succeeds (e.g. the trace context of the acquiring request), so
	// a contender can tell whom it waited for. At most MaxMetadataLen bytes.
	HolderMetadata(ctx context.Context, a AcquireInfo) string
	// Contended says whom an acquire met holding the lock, wherever it
	// waited. attempt ≥ 1 numbers this acquire's own Redis attempt that
	// Redis refused naming h: one call per such attempt. attempt 0 means h
	// was met through this Client's local queue, with no Redis attempt of
	// this acquire: a lease of this Client holding the lock, or the holder
	// Redis named to the attempts of the queue's head (another caller)
	// while this acquire waited behind it. Those are reported once per
	// distinct holder (Owner and Token), when the local wait ends (its
	// turn, a hand-off, or the end of the acquire), at most
	// MaxQueuedHolders of them besides the one it queued behind; h.Seen
	// says when the holder was met. So every acquire that waited names at
	// least one holder, unless nothing ever answered (ErrUnavailable).
	// A writer queued before a reader (NotAcquiredError.Promised) holds
	// nothing yet: it is named with Token 0, by its Owner and Metadata, and
	// a reader that named it so does not name it again once it holds (the
	// same Owner and Metadata): one wait-for, one holder.
	Contended(ctx context.Context, a AcquireInfo, h Holder, attempt int)
	// AcquireEnd is called once per acquire with its outcome. On success the
	// returned context is the base of the lease's context (a hold span, say);
	// otherwise it is ignored.
	AcquireEnd(ctx context.Context, a AcquireInfo, r AcquireResult) context.Context
	// Renewed is called after each renewal round of a lease (err nil: confirmed).
	Renewed(ctx context.Context, l LeaseInfo, err error)
	// Lost is called once when a lease is lost; cause matches ErrLost,
	// ErrClosed or ErrMaxHold (held for its MaxHold: the lock is released
	// when the holder returns).
	Lost(ctx context.Context, l LeaseInfo, cause error)
	// Released is called once when the owner releases a lease it held.
	Released(ctx context.Context, l LeaseInfo, err error)
	// Unlocked is reported by adapters that run a handler without the lock
	// because Redis was unavailable and the adapter is fail-open.
	Unlocked(ctx context.Context, a AcquireInfo, err error)
}

// MaxQueuedHolders bounds the holders met through the local queue that
// one acquire reports (Contended with attempt 0): a Client keeps at most
// that many per key for its waiters, however many holders came and went.
const MaxQueuedHolders = 8

// MaxMetadataLen bounds the holder metadata an Observer may store; longer
// strings are cut.
const MaxMetadataLen = 1024

// AcquireInfo describes one acquire call.
type AcquireInfo struct {
	Key  string // the lock key
	Name string // low-cardinality telemetry name (route template, RPC method); may be empty
	// Strategy is how the caller waits: "notify" (pub/sub behind the local
	// FIFO queue), "nowait" (one attempt, NoWait), "try" (TryAcquire) or
	// "all" (one of the locks AcquireAll took together in one round trip).
	Strategy string
	Wait     time.Duration // wait budget; 0 for one attempt ("try", "nowait")
	Start    time.Time
	// Owner is the acquiring Client's owner id (WithOwner), which tells
	// replicas apart.
	Owner string
	// Kind is what is acquired: KindMutex, KindSemaphore (a permit of
	// Limit), KindRead or KindWrite (a side of a read/write lock).
	Kind  string
	Limit int // a semaphore's number of permits; 0 for the other kinds
}

// AcquireResult is the end of one acquire call.
type AcquireResult struct {
	Outcome Outcome
	// Attempts is the number of Redis attempts this acquire made itself: 0
	// when it was refused locally (NoWait or MaxWaiters with the lock held
	// or queued for inside this Client), when it was handed the lock
	// (Handoff) before its turn to ask Redis came, or when it ended while
	// still queued behind another caller.
	Attempts int
	// Handoff: the lock was handed over by a releasing lease of this
	// Client, in the script that released it, rather than taken by an
	// attempt of this acquire.
	Handoff bool
	Waited  time.Duration // from AcquireStart to the end
	Token   int64         // fencing token when acquired (replayed: the token of the claim that stored the answer)
	// TakenOver (Client.Claim): the claim took over a claim that expired
	// without an answer.
	TakenOver bool
	Holder    Holder // last holder seen when contended
	Err       error  // nil when acquired
}

// LeaseInfo describes a lease in lease events.
type LeaseInfo struct {
	Key, Name  string
	Kind       string // as AcquireInfo.Kind
	Owner      string // the holding Client's owner id (WithOwner)
	Token      int64
	AcquiredAt time.Time
	Held       time.Duration // time since AcquiredAt when the event happened
}

// NopObserver does nothing; embed it to implement only some events.
type NopObserver struct{}

func (NopObserver) AcquireStart(ctx context.Context, _ AcquireInfo) context.Context { return ctx }
func (NopObserver) HolderMetadata(context.Context, AcquireInfo) string              { return "" }
func (NopObserver) Contended(context.Context, AcquireInfo, Holder, int)             {}
func (NopObserver) AcquireEnd(ctx context.Context, _ AcquireInfo, _ AcquireResult) context.Context {
	return ctx
}
func (NopObserver) Renewed(context.Context, LeaseInfo, error)    {}
func (NopObserver) Lost(context.Context, LeaseInfo, error)       {}
func (NopObserver) Released(context.Context, LeaseInfo, error)   {}
func (NopObserver) Unlocked(context.Context, AcquireInfo, error) {}
