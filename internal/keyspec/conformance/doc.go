// Package conformance is the behaviour every HTTP lock adapter must show,
// written once and run against ginlock, echolock and echo5lock (and against
// pairs of them: two frameworks serving the same resource exclude each
// other). Each adapter's test calls Run with its Adapter; the scenarios are
// the list of issue 3: exclusion across two replicas and two routes,
// parallelism of different keys, no-wait 409s, Redis down (fail-closed and
// fail-open), bad and hostile keys, a client hanging up, a panicking handler,
// a handler outliving 3×TTL and losing its lock, deadlines, misconfiguration.
//
// Everything runs on a real redis-server (internal/redistest) behind real
// loopback HTTP servers; each replica has its own core.Client on its own
// go-redis client, as separate processes would.
package conformance
