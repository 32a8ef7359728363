// Package conformance is the behaviour every HTTP lock adapter must show,
// written once and run against ginlock, echolock and echo5lock (and against
// pairs of them: two frameworks serving the same resource exclude each
// other). Each adapter's test calls Run with its Adapter; the scenarios:
// exclusion across two replicas and two routes, parallelism of different
// keys, no-wait 409s, Redis down and Redis frozen (fail-closed and
// fail-open), bad and hostile keys, one id in any spelling giving one key
// (FuzzCanonicalKey too), a client hanging up, a panicking handler, a
// handler outliving 3×TTL and losing its lock (reported to the release-error
// hook), deadlines, misconfiguration; Flood shows a hostile client's
// distinct methods, paths and keys leave no trace.
//
// Everything runs on a real redis-server (internal/redistest) behind real
// loopback HTTP servers; each replica has its own core.Client on its own
// go-redis client, as separate processes would.
package conformance
