// Package lockview is a live debug page of one process's locks: which
// locks its core.Client holds and waits for right now, which keys its
// requests waited on longest recently, and the leases it lost and the Redis
// errors it met lately. Dashboards (otellock) answer "how hot are locks
// across the fleet"; this page answers "what is this replica stuck on now",
// the question of an incident, without a tracing backend at hand.
//
// Mounting: the View's Observer goes into the Client's options (combined
// with otellock's through core.Observers), the Handler goes on a path of
// the service's choice:
//
//	v, _ := lockview.New() // keys hashed; lockview.WithKeys(lockview.KeyRaw) to show them
//	client, _ := core.New(rdb, core.WithObserver(core.Observers(otellock.New(), v.Observer())))
//	mux.Handle("/debug/locks/", v.Handler(client))
//
// The handler reads only the query string, never the path, so it works
// under any prefix, with or without http.StripPrefix, and its links and its
// form are relative to the page. Put it where your other debug endpoints
// are (behind the same authentication, or on an internal port): it is
// read-only (GET and HEAD; 405 otherwise), yet it shows owners, fencing
// tokens and, if configured, keys. Page requests are not rate-limited:
// each copies the bounded sample table (at most WithMaxKeys × WithSamples
// entries) under the mutex the Observer's events take, cheap for a person
// looking, not something to expose to the public.
//
// # What it shows
//
//   - Held and awaited: from core.Client.Locks, each lock this Client holds
//     (owner, the holding route, fencing token, held for, time left to the
//     lease's local deadline) or queues for, with the routes that wait
//     (the waiters' core.Name) and, when another process holds the lock,
//     that holder as last met (owner, fencing token, when).
//   - Contended keys: per key, the acquires that ended within the window
//     (WithWindow, one minute by default), their wait p50, p99 and max,
//     how they ended, the routes that acquire the key (every name since it
//     was tracked, not the last one) and the holder most recently met. A
//     key keeps its last WithSamples acquires: a key with more within the
//     window shows those (marked "last N"), and the "covers" column says
//     the time they span, so a percentile never claims a minute it does
//     not have. Keys an acquire of this process met held by another lease
//     come first; the others are counted and listed with ?keys=all. The
//     table tracks at most WithMaxKeys keys: a new key replaces the
//     coldest of a few sampled entries (wait decaying over the window),
//     so a flood of distinct keys cannot grow it, and the hot keys stay.
//   - Recent losses and recent Redis errors: the last WithRecent of each.
//
// A process with several Clients serves one View each, and NewIndex links
// them on one page (the demo's replicas do).
//
// # Formats
//
// The page is HTML that reloads itself (meta refresh, WithRefresh) with no
// script and no outside resource. The same data is JSON (type Snapshot)
// with ?format=json, or with an Accept header asking for application/json
// and not text/html; ?keys=all lists every hot key in both.
//
// # Keys
//
// Keys name orders, accounts, tenants. They are shown hashed by default
// (core.HashKey, the value otellock puts on spans, so a row here finds its
// traces), raw with WithKeys(KeyRaw), or not at all with KeyHidden; error
// texts have the key replaced the same way. Everything that comes from
// keys, owners, metadata and errors is escaped by html/template.
//
// # Inspect
//
// ?inspect=KEY (a form on the page) looks up who holds any key across the
// cluster (core.Client.Inspect): owner, fencing token, TTL and the holder's
// metadata. That lets a visitor probe arbitrary keys, so it is off (404)
// unless WithInspect is given; then keys are bounded by WithMaxKeyLen, and
// lookups by WithInspectLimits (429 beyond, never queued).
package lockview
