package otellock

import (
	"context"
	"slices"
	"strings"

	"github.com/lockkit/lockkit/core"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Holder metadata format: the propagator's fields as "name=value" lines,
// e.g. "traceparent=00-<trace id>-<span id>-01" for W3C Trace Context. Only
// the span context is injected (from a context that holds nothing else), so
// the request's baggage never lands in Redis. A field that would take the
// whole past core.MaxMetadataLen is left out rather than cut, the longest
// first.

// holderFormat is how the holder's span context is written when the
// configured propagator writes none: the global default is a no-op until a
// service sets one, and a baggage-only propagator carries no span context.
// A holder link is otellock's own business, between the holder's and the
// waiter's observers, so it does not depend on the service's choice.
var holderFormat propagation.TextMapPropagator = propagation.TraceContext{}

// encodeHolder is what a holder stores next to the lock: the span context
// sc as the propagator writes it, or as W3C Trace Context when it writes
// nothing. Empty when sc is invalid (no tracing).
func encodeHolder(p propagation.TextMapPropagator, sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var c injectCarrier
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	p.Inject(ctx, &c)
	if len(c.fields) == 0 {
		holderFormat.Inject(ctx, &c)
	}
	return c.String()
}

// decodeHolder reads the span context a holder stored, by the propagator
// or else as W3C Trace Context (a holder whose propagator wrote nothing);
// invalid when there is none or it does not parse.
func decodeHolder(p propagation.TextMapPropagator, meta string) trace.SpanContext {
	if meta == "" {
		return trace.SpanContext{}
	}
	sc := trace.SpanContextFromContext(p.Extract(context.Background(), metaCarrier{meta}))
	if !sc.IsValid() {
		sc = trace.SpanContextFromContext(holderFormat.Extract(context.Background(), metaCarrier{meta}))
	}
	return sc
}

// injectCarrier collects the propagator's fields, then writes as many as
// fit in core.MaxMetadataLen, shortest first when not all do: the span
// context proper (traceparent, 55 bytes) is short, a tracestate can be long.
type injectCarrier struct {
	fields [][2]string
	buf    [2][2]string // room for traceparent and tracestate without allocating
}

func (c *injectCarrier) Get(string) string { return "" }
func (c *injectCarrier) Keys() []string    { return nil }

func (c *injectCarrier) Set(key, value string) {
	if key == "" || strings.ContainsAny(key, "=\n") || strings.Contains(value, "\n") {
		return
	}
	if c.fields == nil {
		c.fields = c.buf[:0]
	}
	c.fields = append(c.fields, [2]string{key, value})
}

func (c *injectCarrier) String() string {
	size := func(f [2]string) int { return len(f[0]) + 1 + len(f[1]) }
	total := 0
	for _, f := range c.fields {
		total += size(f) + 1
	}
	fields := c.fields
	if total-1 > core.MaxMetadataLen {
		fields = slices.Clone(fields)
		slices.SortStableFunc(fields, func(a, b [2]string) int { return size(a) - size(b) })
	}
	var b strings.Builder
	for _, f := range fields {
		n := size(f)
		if b.Len() > 0 {
			n++
		}
		if b.Len()+n > core.MaxMetadataLen {
			break
		}
		if b.Len() == 0 {
			b.Grow(min(total, core.MaxMetadataLen))
		} else {
			b.WriteByte('\n')
		}
		b.WriteString(f[0])
		b.WriteByte('=')
		b.WriteString(f[1])
	}
	return b.String()
}

type metaCarrier struct{ s string }

func (c metaCarrier) Get(key string) string {
	for line := range strings.SplitSeq(c.s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func (c metaCarrier) Set(string, string) {}

func (c metaCarrier) Keys() []string {
	var keys []string
	for line := range strings.SplitSeq(c.s, "\n") {
		if k, _, ok := strings.Cut(line, "="); ok {
			keys = append(keys, k)
		}
	}
	return keys
}
