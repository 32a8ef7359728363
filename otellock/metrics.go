package otellock

import (
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric names. Durations are in seconds.
const (
	MetricAcquireDuration = "lockkit.lock.acquire.duration" // histogram: time spent in Acquire, by outcome
	MetricHoldDuration    = "lockkit.lock.hold.duration"    // histogram: acquisition to release or loss
	MetricContentions     = "lockkit.lock.contentions"      // counter: holders met by waits (one per distinct holder per acquire)
	MetricAcquisitions    = "lockkit.lock.acquisitions"     // counter: acquire calls, by outcome
	MetricRenewals        = "lockkit.lock.renewals"         // counter: renewal rounds, by outcome
	MetricLosses          = "lockkit.lock.losses"           // counter: leases that ended without Release
	MetricHeld            = "lockkit.lock.held"             // up-down counter: leases held now
	MetricPending         = "lockkit.lock.pending"          // up-down counter: acquire calls in progress
	MetricUnlocked        = "lockkit.lock.unlocked"         // counter: handlers run without the lock (fail-open)
	MetricTakeovers       = "lockkit.lock.takeovers"        // counter: claims that took over an expired claim (AttrTakenOver)
)

// Advisory bucket boundaries in seconds, applied by default (an SDK view
// that sets its own aggregation wins): the E6 series (1, 1.5, 2.2, 3.3,
// 4.7, 6.8 per decade) from 100 µs to 68 s, so that a quantile read from
// the buckets (Prometheus's histogram_quantile interpolates within one) is
// within a factor 1.5 of the true one wherever locks live: a local
// hand-off's wait of a few hundred microseconds, a request's hold of a few
// milliseconds, a wait budget of seconds. Holds go on, coarser, to an hour
// for background jobs. 36 and 41 boundaries, so 37 and 42 buckets with the
// overflow: a histogram series costs one counter per bucket.
var (
	acquireBuckets = []float64{
		0.0001, 0.00015, 0.00022, 0.00033, 0.00047, 0.00068,
		0.001, 0.0015, 0.0022, 0.0033, 0.0047, 0.0068,
		0.01, 0.015, 0.022, 0.033, 0.047, 0.068,
		0.1, 0.15, 0.22, 0.33, 0.47, 0.68,
		1, 1.5, 2.2, 3.3, 4.7, 6.8,
		10, 15, 22, 33, 47, 68,
	}
	holdBuckets = append(slices.Clone(acquireBuckets), 150, 300, 600, 1800, 3600)
)

type instruments struct {
	acquireDur   metric.Float64Histogram
	holdDur      metric.Float64Histogram
	contentions  metric.Int64Counter
	acquisitions metric.Int64Counter
	renewals     metric.Int64Counter
	losses       metric.Int64Counter
	unlocked     metric.Int64Counter
	takeovers    metric.Int64Counter
	held         metric.Int64UpDownCounter
	pending      metric.Int64UpDownCounter

	attrs attrCache
}

// newInstruments creates the instruments. An instrument the SDK refuses is
// reported to the global error handler and replaced by a no-op one, so the
// observer always works.
func newInstruments(m metric.Meter) *instruments {
	nm := noop.Meter{}
	var i instruments
	handle := func(err error) {
		if err != nil {
			otel.Handle(err)
		}
	}
	var err error
	if i.acquireDur, err = m.Float64Histogram(MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("Time spent acquiring a lock, waiting included, by outcome."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...)); err != nil || i.acquireDur == nil {
		handle(err)
		i.acquireDur, _ = nm.Float64Histogram(MetricAcquireDuration)
	}
	if i.holdDur, err = m.Float64Histogram(MetricHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a lock was held, from acquisition to release or loss."),
		metric.WithExplicitBucketBoundaries(holdBuckets...)); err != nil || i.holdDur == nil {
		handle(err)
		i.holdDur, _ = nm.Float64Histogram(MetricHoldDuration)
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			handle(err)
			c, _ = nm.Int64Counter(name)
		}
		return c
	}
	upDown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			handle(err)
			c, _ = nm.Int64UpDownCounter(name)
		}
		return c
	}
	i.contentions = counter(MetricContentions, "{holder}", "Holders an acquire met while it waited, once per distinct holder (owner and fencing token).")
	i.acquisitions = counter(MetricAcquisitions, "{acquire}", "Acquire calls, by outcome.")
	i.renewals = counter(MetricRenewals, "{renewal}", "Lease renewal rounds, by outcome.")
	i.losses = counter(MetricLosses, "{lease}", "Leases that ended without being released (lost, or client closed).")
	i.unlocked = counter(MetricUnlocked, "{request}", "Handlers run without the lock because Redis was unavailable (fail-open).")
	i.takeovers = counter(MetricTakeovers, "{claim}", "Claims of idempotency records that took over a claim whose owner crashed or stalled past its TTL without an answer.")
	i.held = upDown(MetricHeld, "{lease}", "Leases held now.")
	i.pending = upDown(MetricPending, "{acquire}", "Acquire calls in progress (waiting or attempting).")
	return &i
}

// attrCache keeps one attribute set per (name, kind, outcome, error.type), so a
// measurement costs no allocation once a combination has been seen. The
// combinations are few when names are what core.Name asks for, route
// templates or RPC methods the server chose. A name built from the request
// instead (a raw path, a client's header) would add sets for as long as
// clients send new values, so the cache is bounded: it keeps at most
// maxCachedSets sets (about 1.4 MiB), and past that sets are built per
// measurement and not kept. Recording stays correct, it only allocates
// again. (The SDK's own series for such names are bounded by its
// cardinality limit, not here.)
type attrCache struct {
	mu sync.RWMutex
	m  map[attrKey]*measureOpts
}

// measureOpts are ready-made option slices: passing them with ... costs no
// allocation, where a fresh variadic argument would.
type measureOpts struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

type attrKey struct{ name, kind, outcome, errType string }

// maxCachedSets bounds attrCache: room for a few hundred names with every
// outcome and error.type each one meets.
const maxCachedSets = 4096

func (c *attrCache) get(name, kind, outcome, errType string) *measureOpts {
	k := attrKey{name, kind, outcome, errType}
	c.mu.RLock()
	o, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	set := metric.WithAttributeSet(metricSet(name, kind, outcome, errType))
	o = &measureOpts{add: []metric.AddOption{set}, rec: []metric.RecordOption{set}}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[attrKey]*measureOpts)
	}
	if len(c.m) < maxCachedSets {
		c.m[k] = o
	}
	c.mu.Unlock()
	return o
}

// metricSet is the only place metric attributes are made: name, kind,
// outcome and error.type, each left out when empty, and never the key.
func metricSet(name, kind, outcome, errType string) attribute.Set {
	kv := make([]attribute.KeyValue, 0, 4)
	if name != "" {
		kv = append(kv, AttrName.String(name))
	}
	if kind != "" {
		kv = append(kv, AttrKind.String(kind))
	}
	if outcome != "" {
		kv = append(kv, AttrOutcome.String(outcome))
	}
	if errType != "" {
		kv = append(kv, AttrErrorType.String(errType))
	}
	return attribute.NewSet(kv...)
}
