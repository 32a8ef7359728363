// Package lockview is a live debug page of one process's locks: which
// locks its core.Client holds and waits for right now (and, for a lock
// another process holds, that holder as last met), which keys its requests
// waited on longest recently (wait p50, p99 and max, the routes that take
// them), and the leases it lost and the Redis errors it met lately.
// Dashboards (otellock) answer "how hot are locks across the fleet"; this
// page answers "what is this replica stuck on now", the question of an
// incident, without a tracing backend at hand.
//
// The View's Observer goes into the Client's options (beside otellock's,
// through core.Observers) and its Handler on a path of the service's
// choice (ExampleView_Handler); NewIndex links the Views of several
// Clients on one page. The page is HTML that reloads itself, with no
// script and no outside resource, and the same data is JSON (Snapshot)
// with ?format=json.
//
// Its memory is fixed whatever keys requests bring (WithMaxKeys keys of
// WithSamples acquires each). Keys are shown hashed by default
// (core.HashKey, the value otellock puts on spans), raw with
// WithKeys(KeyRaw), or not at all; the handler is read-only; ?inspect=KEY,
// which looks up any key's holder, is off unless WithInspect. Mount it
// where your other debug endpoints are: it shows owners and fencing
// tokens.
//
// The repository's docs/lockview.md is the reference: every column, the
// window and what a row covers, the bounds, and the safety rules.
package lockview
