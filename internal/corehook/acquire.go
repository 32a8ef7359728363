package corehook

// AcquireSettings reports which of the settings an adapter owns the given
// acquire options set: the wait budget (Wait), NoWait, the TTL and the
// telemetry name. opts is a []core.AcquireOption. The adapters reject
// options that set these through their AcquireOptions escape hatch, since
// each adapter has its own option for them and a silent override would
// make the same option mean two things.
var AcquireSettings func(opts any) (wait, noWait, ttl, name bool)
