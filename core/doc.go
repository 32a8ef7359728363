// Package core is lockkit's lock engine: distributed locks on Redis with
// fencing tokens, automatic renewal, a signal when a lease is lost, and
// waiting by notification instead of polling. The adapters (ginlock,
// echolock, echo5lock, httplock, grpclock, connectlock) put it in front of
// request handlers and otellock reports it to OpenTelemetry; core alone
// locks anything in Go code.
//
// A Client (New; one per process and Redis deployment) runs on a go-redis
// client whose options set ContextTimeoutEnabled, so that a context
// deadline bounds Redis I/O: New refuses a client without it
// (ErrBadRedisClient) and checks every option (ErrInvalidOption).
// NewRedlock gives the same API on independent masters.
//
// Client.Acquire takes the lock on a key ("order:42"; JoinKey builds one
// from parts) and returns a Lease; Lease.Release gives it up, and Client.Do
// runs a function between the two. While held, a lease is renewed every
// TTL/3; when that cannot be confirmed the lease is lost, and its Context
// ends with cause ErrLost before another owner can take the lock.
// Lease.Token is a fencing token, larger than every earlier holder's of
// the key, for the resource to refuse older ones (package fence).
//
// Acquire waits, first come first served and woken by the release, until
// its wait budget (Wait; DefaultWait, 10s, when not given) or ctx ends.
// NoWait makes one attempt without jumping this Client's queue, as a
// request handler wants; TryAcquire makes one attempt whatever the queue,
// for a job that skips its run while another instance holds the lock.
// Client.Semaphore admits at most n leases of a key at once, Client.RWLock
// many readers or one writer, and AcquireAll takes several keys all or
// nothing.
//
// Client.Claim makes a retried request run once: it claims an
// idempotency record, or returns its stored answer, in one round trip; the
// claim is a Lease (renewed, lost, fenced as any), Lease.Complete stores
// the answer fenced by its token, and Release abandons it so a retry runs.
//
// Every error matches ctx.Err() or one of the sentinel errors
// (ErrNotAcquired: seen held; ErrUnavailable: Redis failed or did not
// answer in time; ErrLost, ...). Classify turns an acquire's error into an
// Outcome, the taxonomy the Observer and every adapter answer by.
//
// The package's examples run as tests. The reference is the repository's
// docs/: locks.md (this package), waiting.md, errors.md, fencing.md,
// guarantees.md (failure modes), redlock.md, deployment.md, key-layout.md
// (what is stored in Redis, which is not API) and versioning.md (lockkit
// is v0: the API may change between minor versions, each change listed in
// CHANGELOG.md).
package core
