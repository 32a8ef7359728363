package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/locktest"
	"github.com/lockkit/lockkit/otellock"
)

// patience bounds every wait for an event.
const patience = 60 * time.Second

// Two replicas wired as docs/tracing.md says, on one Redis: a payment of
// order 42 on replica-2 waits for one on replica-1, and its lock.acquire
// span links to replica-1's request span (otelgin's, otelhttp's,
// otelgrpc's), whose span context traveled with the lock through Redis.
func TestHolderLinkThroughTheSetup(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	for _, fw := range []struct {
		name  string
		serve serveReplica
	}{
		{"gin", serveHTTP(ginPay)},
		{"net/http", serveHTTP(httpRoutes)},
		{"grpc", serveGRPC},
	} {
		t.Run(fw.name, func(t *testing.T) { holderLink(t, fw.serve) })
	}
}

// A serveReplica serves one replica's payment of order 42 under locks, its
// handler passing g, until the test ends, and returns what pays through it.
type serveReplica func(t *testing.T, locks *core.Client, g *gate) payer

// A payer pays order 42 on one replica and says whether it was paid.
type payer func(ctx context.Context) error

// gate is the handlers' side of the choreography: each handler says it has
// entered, holding the lock, then waits to be released.
type gate struct{ entered, release chan struct{} }

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

// pass is the handler's body.
func (g *gate) pass(ctx context.Context) {
	select {
	case g.entered <- struct{}{}:
	case <-ctx.Done():
		return
	}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
}

// holderLink pays order 42 on replica-1, and on replica-2 while replica-1
// holds it, then checks the spans (checkHolderLink).
func holderLink(t *testing.T, serve serveReplica) {
	spans := installProviders(t)
	srv := locktest.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	g := newGate()
	replica := func(owner string) (*core.Client, payer) {
		locks, err := newLocks(rdb, owner)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = locks.Close() })
		return locks, serve(t, locks, g)
	}
	_, holder := replica("replica-1")
	waiterLocks, waiter := replica("replica-2")

	pay := func(p payer) <-chan error {
		done := make(chan error, 1)
		ctx := t.Context()
		go func() { done <- p(ctx) }()
		return done
	}
	first := pay(holder)
	testkit.Recv(t, g.entered, patience, "replica-1's payment to start")
	second := pay(waiter)
	testkit.WaitFor(t, patience, "replica-2 to meet replica-1 holding order:42", func() bool {
		for _, l := range waiterLocks.Locks() {
			if l.Key == "order:42" && l.Waiters > 0 && l.Holder.Owner == "replica-1" {
				return true
			}
		}
		return false
	})
	g.release <- struct{}{}
	testkit.Recv(t, g.entered, patience, "replica-2's payment to start")
	g.release <- struct{}{}
	for _, done := range []<-chan error{first, second} {
		if err := testkit.Recv(t, done, patience, "a payment"); err != nil {
			t.Fatalf("payment: %v", err)
		}
	}
	checkHolderLink(t, spans)
}

// installProviders sets the doc's providers up (setupProviders, its
// stdout exporters writing nowhere) with an in-memory span exporter beside
// them, and puts the previous globals back when the test ends.
func installProviders(t *testing.T) *tracetest.InMemoryExporter {
	prevTP, prevMP, prevProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
	shutdown, err := setupProviders(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewInMemoryExporter()
	otel.GetTracerProvider().(*sdktrace.TracerProvider).RegisterSpanProcessor(sdktrace.NewSimpleSpanProcessor(spans))
	t.Cleanup(func() {
		_ = shutdown(context.Background())
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
		otel.SetTextMapPropagator(prevProp)
	})
	return spans
}

// checkHolderLink: two requests, one server span each in a trace of its
// own; each replica's lock.acquire (told apart by lockkit.lock.owner) is a
// child of its request's server span; replica-1's has no link, and
// replica-2's exactly one, to replica-1's server span.
func checkHolderLink(t *testing.T, spans *tracetest.InMemoryExporter) {
	t.Helper()
	// A server span may end after its client has the answer (otelgrpc's
	// ends on the server's End event, after the status is written): wait
	// for both.
	var exported tracetest.SpanStubs
	testkit.WaitFor(t, patience, "both requests' server spans to be exported", func() bool {
		if err := otel.GetTracerProvider().(*sdktrace.TracerProvider).ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		exported = spans.GetSpans()
		return countServers(exported) >= 2
	})
	if n := countServers(exported); n != 2 {
		t.Errorf("%d server spans; want one per request, 2", n)
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	acquires := map[string]tracetest.SpanStub{}
	for _, s := range exported {
		byID[s.SpanContext.SpanID()] = s
		if s.Name != "lock.acquire" {
			continue
		}
		owner := ""
		for _, a := range s.Attributes {
			if a.Key == otellock.AttrOwner {
				owner = a.Value.AsString()
			}
		}
		if _, dup := acquires[owner]; dup {
			t.Errorf("two lock.acquire spans of owner %q", owner)
		}
		acquires[owner] = s
	}
	// spansOf is owner's lock.acquire and its parent, the request's span.
	spansOf := func(owner string) (acquire, req tracetest.SpanStub, ok bool) {
		acquire, ok = acquires[owner]
		if !ok {
			t.Errorf("no lock.acquire span of %s", owner)
			return acquire, req, false
		}
		req, ok = byID[acquire.Parent.SpanID()]
		if !ok || req.SpanKind != trace.SpanKindServer || req.SpanContext.TraceID() != acquire.SpanContext.TraceID() {
			t.Errorf("%s's lock.acquire is not a child of its request's server span", owner)
			return acquire, req, false
		}
		return acquire, req, true
	}
	holderAcquire, holderRequest, ok1 := spansOf("replica-1")
	waiterAcquire, waiterRequest, ok2 := spansOf("replica-2")
	if !ok1 || !ok2 {
		return
	}
	if n := len(holderAcquire.Links); n != 0 {
		t.Errorf("replica-1's lock.acquire has %d links; it met no holder", n)
	}
	if holderRequest.SpanContext.TraceID() == waiterRequest.SpanContext.TraceID() {
		t.Errorf("both requests are in trace %v; want a trace each", holderRequest.SpanContext.TraceID())
	}
	if n := len(waiterAcquire.Links); n != 1 {
		t.Fatalf("replica-2's lock.acquire has %d links; want 1, to replica-1's request", n)
	}
	if got, want := waiterAcquire.Links[0].SpanContext, holderRequest.SpanContext; got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() {
		t.Errorf("replica-2's lock.acquire links to %v/%v, not to replica-1's request %v/%v",
			got.TraceID(), got.SpanID(), want.TraceID(), want.SpanID())
	}
}

// countServers counts the server spans: one per request, once ended.
func countServers(spans tracetest.SpanStubs) int {
	n := 0
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			n++
		}
	}
	return n
}
