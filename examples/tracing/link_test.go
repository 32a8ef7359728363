package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds every wait for an event.
const patience = 60 * time.Second

// Two replicas wired as docs/tracing.md says, on one Redis: a payment of
// order 42 on replica-2 waits for one on replica-1, and its lock.acquire
// span links to replica-1's request span (otelgin's, otelhttp's), whose
// span context traveled with the lock through Redis.
func TestHolderLinkThroughTheSetup(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	for _, fw := range []struct {
		name   string
		routes func(*core.Client, http.Handler) http.Handler
	}{
		{"gin", func(l *core.Client, pay http.Handler) http.Handler {
			return ginRoutes(l, func(c *gin.Context) { pay.ServeHTTP(c.Writer, c.Request) })
		}},
		{"net/http", httpRoutes},
	} {
		t.Run(fw.name, func(t *testing.T) { holderLink(t, fw.routes) })
	}
}

func holderLink(t *testing.T, routes func(*core.Client, http.Handler) http.Handler) {
	prevTP, prevMP, prevProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
		otel.SetTextMapPropagator(prevProp)
	})
	spans := tracetest.NewInMemoryExporter()
	shutdown := setupProviders(spans, sdkmetric.NewManualReader())
	defer shutdown(context.Background())

	srv := locktest.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		case <-r.Context().Done():
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	})
	replica := func(owner string) (*core.Client, http.Handler) {
		locks, err := newLocks(rdb, owner)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = locks.Close() })
		return locks, routes(locks, pay)
	}
	_, holder := replica("replica-1")
	waiterLocks, waiter := replica("replica-2")

	post := func(h http.Handler) <-chan int {
		done := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
			done <- w.Code
		}()
		return done
	}
	first := post(holder)
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatal("the first payment did not start")
	}
	second := post(waiter)
	waitFor(t, "replica-2 meets replica-1 holding order:42", func() bool {
		for _, l := range waiterLocks.Locks() {
			if l.Key == "order:42" && l.Waiters > 0 && l.Holder.Owner == "replica-1" {
				return true
			}
		}
		return false
	})
	release <- struct{}{}
	<-entered
	release <- struct{}{}
	for _, done := range []<-chan int{first, second} {
		if code := <-done; code != http.StatusNoContent {
			t.Fatalf("payment answered %d", code)
		}
	}

	if err := otel.GetTracerProvider().(*sdktrace.TracerProvider).ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byID[s.SpanContext.SpanID()] = s
	}
	var servers, linked int
	for _, s := range byID {
		if s.SpanKind == trace.SpanKindServer {
			servers++
		}
		if s.Name != "lock.acquire" {
			continue
		}
		if parent, ok := byID[s.Parent.SpanID()]; !ok || parent.SpanKind != trace.SpanKindServer {
			t.Errorf("lock.acquire is not a child of the request's server span")
		}
		for _, l := range s.Links {
			h, ok := byID[l.SpanContext.SpanID()]
			if !ok || h.SpanKind != trace.SpanKindServer || h.SpanContext.TraceID() == s.SpanContext.TraceID() {
				t.Errorf("lock.acquire links to %v, not to another request's server span", l.SpanContext)
				continue
			}
			linked++
		}
	}
	if servers != 2 || linked != 1 {
		t.Errorf("%d server spans, %d holder links; want 2 requests, the waiter linked to the holder", servers, linked)
	}
}

// waitFor polls cond until it holds, failing t after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
	}
}

// The gRPC setup builds (its link is shown through the demo's gRPC
// replica, TestTracesAreRequests).
func TestGRPCServerBuilds(t *testing.T) {
	srv := locktest.New(t)
	grpcServer(srv.Client()).Stop()
}
