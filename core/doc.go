// Package core is lockkit's lock engine: distributed locks on Redis with
// fencing tokens, automatic renewal, a signal when a lease is lost, and
// waiting by notification instead of polling. lockkit's adapters (ginlock,
// echolock, echo5lock, httplock, grpclock) put it in front of request
// handlers, and otellock reports it to OpenTelemetry; core alone locks
// anything in Go code.
//
// # Getting started
//
// A Client runs on a go-redis client whose options set ContextTimeoutEnabled:
// without it a context deadline does not bound socket I/O, and a hung Redis
// would hang every lock call, so New refuses such a client
// (ErrBadRedisClient). New takes a *redis.Client (standalone, or the sentinel
// failover client) or a *redis.ClusterClient, does no I/O, and leaves the
// Redis client open on Close.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	locks, err := core.New(rdb, core.WithTTL(30*time.Second))
//	if err != nil {
//		return err
//	}
//	defer locks.Close()
//
// # Acquire, Release, Do
//
// Acquire takes the lock on a key and returns a Lease; Release gives it up.
// Give Release a context that is not already cancelled, so that the lock is
// released even when the request that took it has ended:
//
//	lease, err := locks.Acquire(ctx, "order:42", core.Wait(5*time.Second))
//	if err != nil {
//		return err
//	}
//	defer lease.Release(context.WithoutCancel(ctx))
//	return pay(lease.Context(), lease.Token())
//
// Do is the same in one call: it runs a function holding the lock and
// releases when the function returns or panics. TryAcquire makes exactly one
// attempt. A key is any non-empty string of up to MaxKeyLen bytes that names
// the resource; JoinKey builds one from parts ("order", id), escaping them,
// exactly as every adapter joins the parts it reads from a request.
//
// While a lease is held, one goroutine per Client renews it every TTL/3. If a
// renewal finds another owner, or the lease's local deadline (Lease.Until)
// passes without a confirmed renewal, the lease is lost: Lease.Context is
// cancelled with cause ErrLost before the key can expire on the server. Do
// the protected work under that context (or one from Lease.Bind), so it stops
// when the lock is gone.
//
// # Fencing tokens
//
// Lease.Token is a fencing token, larger than the token of every earlier
// holder of the key. A lock cannot stop a holder that was paused past its TTL
// from writing afterwards; the resource can: pass it the token and have it
// refuse a token smaller than the last one it accepted. The README's
// "Fencing tokens" and "Guarantees and failure modes" say when the order
// holds (not across a failover to a replica that missed the last acquire).
//
// # Waiting
//
// Acquire waits while another owner holds the lock. Callers of one Client
// queue in FIFO order per key; only the head of the queue asks Redis, and it
// is woken by the pub/sub notification of a release, never by polling. On a
// single primary (or a Cluster), a lease released while local callers wait
// hands the lock straight to the next of them in one round trip, which the
// next one does not wait for: it holds the lock from the grant, on the
// releaser's validity and with the releaser's token + 1, until the reply
// confirms it (or, if the releaser no longer held the lock, ends the lease
// with ErrLost). It may hand on before that reply: a key's hand-off scripts
// go in order, those granted while one travels as one pipeline behind it,
// so a hot key is not held to one hand-off per round trip; across
// processes, the lock keeps a wait queue in Redis, one entry per waiting
// Client, and a release grants the lock to the first of them in the same
// step and wakes only that one, so processes are served in turn (a Client's
// run of local hand-offs ends after one turn per local waiter while others
// wait there). Concurrent calls of one Client share round trips: beyond a
// few in flight, they go out together in pipelines. Wait(d) bounds the wait
// (the wait budget, DefaultWait 10s when not given). NoWait fails at
// once when the lock is held or other callers of the Client queue for it,
// MaxWaiters bounds the queue, and Reentrant lets a context that already
// holds a key take it again as a nested lease.
//
// # Errors
//
// Every error the engine returns matches, with errors.Is, the caller's
// ctx.Err() when ctx ended first, or one of the package's sentinel errors:
// ErrNotAcquired when the lock was seen held (a *NotAcquiredError names the
// holder), ErrUnavailable when Redis failed or did not answer in time (an
// *UnavailableError wraps the cause), ErrLost, ErrNotHeld, ErrInvalidKey,
// ErrInvalidOption, ErrWouldDeadlock, ErrUnsupported, ErrClosed and
// ErrBadRedisClient. A Redis that stops answering is never reported as
// contention. Classify turns an acquire error into an Outcome, the one
// taxonomy the Observer, otellock and every adapter use.
//
// # Limits, readers and writers, several keys
//
// Client.Semaphore(key, n) admits at most n leases of key at once (a
// per-key concurrency limit; a refusal classifies as OutcomeLimited), and
// Client.RWLock(key) many readers or one writer, in the order they began to
// wait (neither side starves the other). Their leases are Leases like a
// mutex's, renewed and lost the same way; each holder's entry expires on
// its own on the server, so a crashed holder frees its place at its TTL.
// Their tokens order grants but do not exclude, since holders are
// concurrent. Both need a single primary or a cluster: on a Redlock Client
// they return ErrUnsupported.
//
// AcquireAll takes several keys all or nothing, in one canonical order so
// that requests naming the same keys in different orders never deadlock:
// one round trip when the locks share a server or a cluster slot, else one
// key at a time with rollback. Its MultiLease ends as soon as any of its
// leases does.
//
// # Redlock and replicas
//
// NewRedlock returns a Client with the same API on N independent Redis
// masters, one *redis.Client each (5 is usual): a lock is held when a
// majority granted it within its validity, renewal needs a majority, every
// call fans out to all nodes bounded by WithNodeTimeout, and the fencing
// token is written back to the majority so that it keeps growing when a node
// is lost. On a single primary with replicas, WithReplicaAck makes every
// acquire and renewal wait for replica acknowledgements (Redis WAIT) instead.
//
// # Observing and operating
//
// WithObserver installs an Observer that receives every acquire, contention,
// renewal, loss and release; otellock.New returns one for OpenTelemetry.
// Inspect tells who holds a lock, ForceRelease removes a stuck holder.
//
// # Stability
//
// lockkit is v0. Until v1.0.0 the exported API of this package may change in
// a minor version (0.x to 0.y), and every such change is listed in the
// repository's CHANGELOG.md; patch versions (0.x.y) only fix. Behaviour
// promised here and in the README (the guarantees, the errors and outcomes)
// changes only with a changelog entry.
//
// The Redis key layout is versioned apart from the API: its version ("v1",
// the only one so far) is part of every Redis key and channel the engine
// uses, and docs/key-layout.md describes it. Releases with the
// same layout version share locks, so a rolling deploy is safe. A release
// that changes the layout bumps its version, says so in the changelog, and
// keeps clients of the old and the new layout mutually exclusive while both
// run; skipping a layout version in one deploy is not supported. The names,
// fields and scripts themselves are not API: read a lock with Inspect.
//
// Some of the API is for adapter authors rather than application code:
// Classify and Outcome (how a request in front of a lock ends, and what
// every lockkit adapter answers for it), ErrKeyConfig and KeyPartError (a
// key part the server configured wrongly, or one missing from the request),
// Lease.Bind and LeaseFromContext (the handler's context), Request with
// Client.AcquireRequest and AcquireAllRequest (an acquire given as values),
// Stats, and Observer.Unlocked, which core reports for a Request that fails
// open. Package guard builds the adapters on them: key parts read from a
// request and joined with JoinKey, the answers, the release.
package core
