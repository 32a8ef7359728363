// Package otellock reports lockkit's lock waits and holds to OpenTelemetry:
// spans that show how long a request waited for a lock and whose trace held
// it, and metrics that show which locks are hot.
//
//	c, err := core.New(rdb, core.WithObserver(otellock.New()))
//
// New takes the global TracerProvider, MeterProvider and TextMapPropagator
// unless WithTracerProvider, WithMeterProvider or WithPropagators say
// otherwise; with none configured (the no-op globals) nothing is recorded
// and nothing breaks.
//
// # Spans
//
// Both spans are INTERNAL children of the span in the acquire context (the
// server span of otelgin or otelgrpc, through the lockkit adapters):
//
//	POST /orders/:id/pay                  (server span)
//	├── lock.acquire                      the wait
//	│     events: lock.contended (one per distinct holder met, when it was met)
//	│     links:  the holder's request span (one per distinct holder)
//	└── lock.hold                         acquisition → release or loss
//	      events: lock.renewed (one per renewal round)
//	      └── the handler's own spans
//
// lock.hold is a sibling of lock.acquire, not its child: the wait is over
// when the hold begins. Its context is the base of the lease's context, so
// spans the handler starts (under the adapters, or with Lease.Bind) are its
// children.
//
// Attributes: lockkit.lock.name (core.Name: route template, RPC method),
// lockkit.lock.key (per WithKeyAttribute: a hash by default, see HashKey),
// lockkit.lock.owner (the Client's core.WithOwner: which replica),
// lockkit.lock.kind (mutex, semaphore, read, write: core.AcquireInfo.Kind)
// with lockkit.lock.limit on a semaphore's lock.acquire (its permits),
// lockkit.lock.wait.strategy (notify, nowait, try), lockkit.lock.outcome
// (the core.Outcome: acquired, contended, timeout, canceled, ...),
// lockkit.lock.attempts (the Redis attempts the acquire made itself),
// lockkit.lock.handoff (true when a lease of the same Client handed the
// lock over: no attempt of its own was needed) and
// lockkit.lock.fencing_token. An acquire that did not get the lock carries
// error.type, its outcome.
//
// # Status
//
// A span's status is Error only when the lock could not do its job, so
// that a dashboard's red is a fault to look into, never a policy working
// as meant (following the OpenTelemetry conventions: expected outcomes are
// not errors of the operation, the way a server span leaves 4xx Unset):
//
//	lock.acquire  Error: unavailable, closed, misconfigured, bad_key
//	              Unset: acquired; contended, timeout (another owner held it: the
//	                     service's own wait policy), limited (every permit of a
//	                     semaphore held: its limit working), canceled, deadline_exceeded
//	                     (the caller's decision); error.type says which
//	lock.hold     Error: lost, closed (the handler ran without the lock from then on),
//	              and a failed release (not_held, unavailable)
//
// The request's own span carries the request's status (409, 503,
// Aborted, ...), set by its instrumentation. Status descriptions leave the
// key out unless keys are recorded raw.
//
// # Holder links
//
// When a lock is acquired, the span context of the acquiring request (the
// span in the acquire context, lock.acquire's parent; lock.acquire's own
// when there is none) is stored next to the lock as holder metadata, in
// the same write: as the propagator writes it (WithPropagators, else the
// global one), or as W3C Trace Context when that writes nothing, as the
// no-op global default does ("traceparent=00-<trace id>-<span id>-01").
// Holder links so need no propagator set up. Only the span context is
// written, never the request's baggage. A waiter whose attempt finds the
// lock held gets that metadata in the same round trip and adds a span link
// to it, so a tracing UI jumps from the waiting request to the request
// that held the lock.
//
// Every wait says whom it waited for, wherever it waited: a request queued
// in its Client's local queue behind another request of the same process
// (which asks Redis for all of them) gets the holders that request met,
// and the same-process holders before it, as lock.contended events with
// lockkit.lock.attempt 0 (core.Observer.Contended). Each event carries the
// holder's owner and fencing token (lockkit.lock.holder.owner,
// lockkit.lock.holder.fencing_token) and the time the holder was met; each
// link carries them too. A span records at most 32 holders.
//
// # Metrics
//
// All durations are in seconds. Metric attributes are lockkit.lock.name,
// lockkit.lock.kind (mutex, semaphore, read, write: the readers and the
// writers of one route are two series), lockkit.lock.outcome and
// error.type only, never the key:
//
//	lockkit.lock.acquire.duration  histogram       Acquire time, waiting included (name, kind, outcome, error.type)
//	lockkit.lock.hold.duration     histogram       acquisition → release or loss (name, kind, error.type on an abnormal end)
//	lockkit.lock.contentions       counter         holders met by waits, one per distinct holder per acquire (name, kind)
//	lockkit.lock.acquisitions      counter         acquire calls (name, kind, outcome, error.type)
//	lockkit.lock.renewals          counter         renewal rounds (name, kind, outcome ok|lost|error, error.type)
//	lockkit.lock.losses            counter         leases ended without Release (name, kind, error.type lost|closed)
//	lockkit.lock.held              up-down counter leases held now (name, kind)
//	lockkit.lock.pending           up-down counter acquire calls in progress (name, kind)
//	lockkit.lock.unlocked          counter         handlers run unlocked, fail-open (name, kind, error.type)
//
// The histograms' bucket boundaries are chosen for locks and applied by
// default (advisory boundaries: a view of the SDK that sets its own
// aggregation wins). They are the E6 series, six per decade, from 100 µs
// to 68 s:
//
//	0.0001 0.00015 0.00022 0.00033 0.00047 0.00068  (100 µs … 680 µs: local hand-offs)
//	0.001  0.0015  0.0022  0.0033  0.0047  0.0068   (1 ms …: Redis round trips, short holds)
//	0.01 … 0.068, 0.1 … 0.68, 1 … 6.8, 10 … 68       (request holds, waits, wait budgets)
//
// No bucket is wider than a factor 1.5, so a quantile estimated from them
// (Prometheus's histogram_quantile interpolates within the bucket that
// holds it) is within a factor 1.5 of the true one; past 68 s a wait is in
// the overflow bucket. lockkit.lock.hold.duration adds 150, 300, 600,
// 1800 and 3600 for background jobs that hold a lock for minutes.
//
// error.type values: on an acquire, the name of its core.Outcome (timeout,
// contended, canceled, deadline_exceeded, unavailable, bad_key,
// misconfigured), the same taxonomy every adapter answers by; on a lease,
// lost, closed, not_held or unavailable; _OTHER for anything else.
//
// # Cost and blocking
//
// The observer's calls do no I/O and take no lock held across I/O; the
// engine calls Renewed and Lost from its renewal goroutine. Exporting is
// the SDK's business: use a batching span processor (sdktrace.WithBatcher),
// which drops spans rather than block when its queue is full. A
// SimpleSpanProcessor exports synchronously inside span.End, and so would
// make acquire and renewal wait for the exporter. Metric attribute sets
// are cached per (name, kind, outcome, error.type), so recording allocates
// nothing once warm. The cache keeps at most 4096 sets, so a name taken
// from requests (which core.Name should never be) cannot grow it without
// bound; past that, recording allocates per measurement.
package otellock
