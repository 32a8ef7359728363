package main

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/otellock"
)

// tracedRun runs the demo with every replica's spans recorded in memory
// (the test hook, not the environment: nothing is exported).
func tracedRun(t *testing.T) (*result, string, []sdktrace.ReadOnlySpan) {
	t.Helper()
	noOTel(t)
	rec := tracetest.NewSpanRecorder()
	cfg := testConfig("")
	cfg.hooks.spans = rec
	res, out := runScenario(t, cfg)
	checkHolds(t, res, out)
	return res, out, rec.Ended()
}

func instanceID(s sdktrace.ReadOnlySpan) string {
	v, _ := s.Resource().Set().Value(semconv.ServiceInstanceIDKey)
	return v.AsString()
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// The demo's traces are requests: on each replica a lock.acquire's parent
// is that replica's server span, named for the route or the RPC; the order
// book's writes are children of lock.hold; each replica's spans carry a
// service.instance.id of their own.
func TestTracesAreRequests(t *testing.T) {
	_, _, spans := tracedRun(t)
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	instances := map[string]bool{}
	served := map[string]map[string]int{} // replica -> server span name -> lock.acquire children
	var writes, writesUnderHold int
	for _, s := range spans {
		id := instanceID(s)
		instances[id] = true
		switch s.Name() {
		case otellock.SpanAcquire:
			p, ok := byID[s.Parent().SpanID()]
			// A payment's lock is taken inside its idempotency claim:
			// under the claim's lock.hold, itself under the server span.
			for ok && p.Name() == otellock.SpanHold && attr(p, otellock.AttrKind) == core.KindClaim {
				p, ok = byID[p.Parent().SpanID()]
			}
			if !ok {
				t.Errorf("a lock.acquire of %s has no recorded parent (its trace is not a request)", id)
				continue
			}
			if p.SpanKind() != trace.SpanKindServer || instanceID(p) != id || p.SpanContext().TraceID() != s.SpanContext().TraceID() {
				t.Errorf("a lock.acquire of %s has parent %q (kind %v) of %s", id, p.Name(), p.SpanKind(), instanceID(p))
				continue
			}
			replica := id[strings.LastIndex(id, "-")+1:]
			// Lock and RPC telemetry join: a gRPC lock's name is the name
			// otelgrpc gives the call's span (and its rpc.method).
			if replica == replicaGRPC && attr(s, otellock.AttrName) != p.Name() {
				t.Errorf("a gRPC lock is named %q under the server span %q: they do not join", attr(s, otellock.AttrName), p.Name())
			}
			if served[replica] == nil {
				served[replica] = map[string]int{}
			}
			served[replica][p.Name()]++
		case orders.SpanWrite:
			writes++
			if p, ok := byID[s.Parent().SpanID()]; ok && p.Name() == otellock.SpanHold && instanceID(p) == id {
				writesUnderHold++
			}
		}
	}
	if len(instances) != len(replicaNames) {
		t.Errorf("service.instance.id of the spans: %v; want one per replica", instances)
	}
	for _, name := range replicaNames {
		names := served[name]
		want := []string{"POST /orders/:id/pay", "POST /orders/:id/refund", "POST /orders/:id/ship"}
		if name == replicaGRPC {
			want = []string{"orders.v1.Orders/PayOrder", "orders.v1.Orders/RefundOrder", "orders.v1.Orders/ShipOrder", "orders.v1.Orders/ImportLines"}
		}
		for _, w := range want {
			if names[w] == 0 {
				t.Errorf("replica %s: no lock.acquire under a server span %q (got %v)", name, w, names)
			}
		}
	}
	if writes == 0 || writesUnderHold != writes {
		t.Errorf("%d of %d orders.write spans are children of lock.hold", writesUnderHold, writes)
	}
	for _, s := range spans {
		if s.Name() == "POST /orders/:id/pay" && attr(s, semconv.HTTPRouteKey) != "/orders/:id/pay" {
			t.Errorf("server span %q of %s has http.route %q", s.Name(), instanceID(s), attr(s, semconv.HTTPRouteKey))
		}
	}
}

// The report's "found held" counts and the spans agree: per key, the
// acquires the report counts as having found the lock held are the
// lock.acquire spans with a lock.contended event.
func TestReportMatchesSpans(t *testing.T) {
	res, out, spans := tracedRun(t)
	withEvent := map[string]int{}
	total := 0
	for _, s := range spans {
		// A claim's acquire found "held" is a payment in progress
		// elsewhere: a record, not a lock, which the report's lock
		// numbers leave out.
		if s.Name() != otellock.SpanAcquire || attr(s, otellock.AttrKind) == core.KindClaim {
			continue
		}
		for _, e := range s.Events() {
			if e.Name == otellock.EventContended {
				withEvent[attr(s, otellock.AttrKey)]++
				total++
				break
			}
		}
	}
	reported := 0
	for _, r := range res.replicas {
		reported += r.contended
	}
	if reported == 0 || reported != total {
		t.Errorf("the report counts %d acquires that found the lock held, the spans %d", reported, total)
	}
	for _, k := range res.keys {
		if k.contended != withEvent[k.key] {
			t.Errorf("%s: the report counts %d of %d acquires found held, %d spans have %s", k.key, k.contended, k.acquires, withEvent[k.key], otellock.EventContended)
		}
	}
	if t.Failed() {
		t.Log("\n" + out)
	}
}
