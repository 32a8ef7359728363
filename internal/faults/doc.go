// Package faults is the fault-injection harness of lockkit: independent
// witnesses that judge a lock run from the outside, and helpers that build
// the Redis topologies the scenarios break.
//
//   - History records, per key, who believed they held the lock from when to
//     when. A believed hold ends at the earliest of its release, the lease's
//     local deadline (Until, read when the hold ends) and the moment its
//     context ended. Overlaps finds two beliefs on one key at once;
//     TokenInversions finds a later holder with a fencing token not above an
//     earlier one's.
//   - Resource is a fenced store: a write carrying a fencing token lower than
//     the highest it has seen is rejected, and a read-modify-write that
//     overwrote a write it never read counts as a lost update.
//   - CounterHistory records the read-modify-writes of a counter kept in a
//     real fenced store (package fence) and checks with porcupine that they
//     are linearizable: a refused write is a no-op, a lost update is not
//     linearizable.
//   - Ledger counts, per id of work that must be done once (a payment
//     retried under an idempotency key), its handler's runs and what each
//     of them did: applied it, found it applied, or was refused by the
//     fence; NotOnce lists every id applied twice or never.
//   - Liveness checks that every waiter acquired within a bound after the
//     faults healed; LeftLocks lists lock hashes still owned in Redis (an `o`
//     field) and keys kept without a TTL.
//   - Contention records every real holder of a key, so an acquire reported
//     "not acquired" can be checked against whether anyone held the lock
//     during its wait (a Redis that does not answer is not contention).
//   - StartCluster builds a Redis Cluster of real redis-server processes.
//
// The package does not import core, so core's own tests can use it too: a
// lease is anything with Key, Token, Context and Until (*core.Lease is one).
package faults
