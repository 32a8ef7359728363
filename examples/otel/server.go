package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

const payRoute = "/orders/:id/pay"

// replica is one instance of the service: its own lockkit Client (own Redis
// connection pool, own owner id) behind its own HTTP listener, as in a
// deployment of several replicas behind a load balancer.
type replica struct {
	name   string
	client *core.Client
	rdb    redis.UniversalClient
	srv    *serve.Server
	url    string

	stopOnce sync.Once
	stopErr  error
}

// startReplica serves the order routes on a loopback port, with a go-redis
// client of its own on rs (its own connection pool), as a separate process
// would have. obs is the lockkit Observer (otellock.New()); hooks is the
// demo's way to order its two requests and is nil in a real service.
func startReplica(name string, rs *embedded.Redis, obs core.Observer, hooks *demoHooks) (*replica, error) {
	rdb := rs.NewClient()
	c, err := core.New(rdb, core.WithObserver(obs), core.WithOwner(name))
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	r := gin.New()
	r.Use(gin.Recovery(), otelgin.Middleware(serviceName))
	r.POST(payRoute, ginlock.New(c, ginlock.Key(ginlock.Const("order"), ginlock.Param("id")), ginlock.Wait(10*time.Second)), payHandler(name, hooks))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = c.Close()
		_ = rdb.Close()
		return nil, err
	}
	return &replica{name: name, client: c, rdb: rdb, url: "http://" + ln.Addr().String(), srv: serve.Start(ln, r)}, nil
}

// stop shuts the replica down once; later calls return the first result.
func (r *replica) stop(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.stopErr = errors.Join(r.srv.Stop(ctx), r.client.Close(), r.rdb.Close())
	})
	return r.stopErr
}

// payHandler "charges the card" under the lock; its span is a child of
// lock.hold.
func payHandler(replica string, hooks *demoHooks) gin.HandlerFunc {
	tracer := otel.Tracer("github.com/lockkit/lockkit/examples/otel")
	return func(g *gin.Context) {
		ctx := g.Request.Context()
		lease, _ := core.LeaseFromContext(ctx)
		hooks.holding(ctx)
		_, span := tracer.Start(ctx, "charge card", trace.WithAttributes(attribute.String("order.id", g.Param("id"))))
		select {
		case <-time.After(50 * time.Millisecond): // the payment provider's latency
		case <-ctx.Done():
		}
		span.End()
		g.JSON(http.StatusOK, gin.H{"replica": replica, "order": g.Param("id"), "fencing_token": lease.Token()})
	}
}

// demoHooks lets the demo make its request pair contend for certain: the
// first request holds the lock until the second has found it held (seen
// through the second replica's Observer). A real service has none of this.
type demoHooks struct {
	first     sync.Once
	held      chan struct{} // closed when the first request holds the lock
	contended chan struct{} // closed when the second request met the lock held
	signal    sync.Once
}

func newDemoHooks() *demoHooks {
	return &demoHooks{held: make(chan struct{}), contended: make(chan struct{})}
}

func (h *demoHooks) holding(ctx context.Context) {
	if h == nil {
		return
	}
	h.first.Do(func() {
		close(h.held)
		select { // bounded: the demo never hangs on a lost signal
		case <-h.contended:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
		}
	})
}

// observer wraps the lockkit Observer and closes contended at the first
// contention it sees.
func (h *demoHooks) observer(o core.Observer) core.Observer {
	return &hookObserver{Observer: o, h: h}
}

type hookObserver struct {
	core.Observer
	h *demoHooks
}

func (o *hookObserver) Contended(ctx context.Context, a core.AcquireInfo, holder core.Holder, attempt int) {
	o.Observer.Contended(ctx, a, holder, attempt)
	o.h.signal.Do(func() { close(o.h.contended) })
}
