package ginlock_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The options no other test reaches: a Func key part, AcquireOptions and
// ReleaseTimeout on the lease, and the OnMisconfigured, OnUnavailable and
// OnClientGone answers.
func TestRemainingOptions(t *testing.T) {
	srv := redistest.Start(t)
	met := make(chan struct{}, 16)
	client := testkit.Client(t, srv.NewClient(), core.WithObserver(contended{ch: met}))
	e := gin.New()
	tenant := ginlock.Func(func(c *gin.Context) (string, error) { return c.Query("tenant"), nil })
	e.POST("/func", ginlock.New(client, ginlock.Key(ginlock.Const("t"), tenant),
		ginlock.TTL(7*time.Second), ginlock.AcquireOptions(core.MaxWaiters(5)), ginlock.ReleaseTimeout(time.Second)),
		func(c *gin.Context) {
			l, _ := ginlock.Lease(c)
			c.String(http.StatusOK, "%s %v", l.Key(), l.TTL())
		})
	e.POST("/bad/:id", ginlock.New(client, ginlock.Key(ginlock.Param("nope")),
		ginlock.OnMisconfigured(func(c *gin.Context, err error) { c.String(599, "config: %v", errors.Is(err, core.ErrKeyConfig)) })), leaseKey)
	gone := make(chan error, 1)
	e.POST("/wait/:id", ginlock.New(client, ginlock.Key(ginlock.Const("order"), ginlock.Param("id")),
		ginlock.OnClientGone(func(c *gin.Context, err error) { gone <- err })), leaseKey)

	if w := serve(e, http.MethodPost, "/func?tenant=a:b"); w.Code != 200 || w.Body.String() != `t:a\:b 7s` {
		t.Errorf("Func part + AcquireOptions: %d %q", w.Code, w.Body.String())
	}
	if w := serve(e, http.MethodPost, "/bad/1"); w.Code != 599 || w.Body.String() != "config: true" {
		t.Errorf("OnMisconfigured: %d %q", w.Code, w.Body.String())
	}

	// OnClientGone: the request's context ends while it waits.
	ctx := testkit.Context(t, 10*time.Second)
	l, err := client.Acquire(ctx, "order:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	rctx, cancel := context.WithCancel(ctx)
	req := httptest.NewRequest(http.MethodPost, "/wait/1", nil).WithContext(rctx)
	done := make(chan struct{})
	go func() { e.ServeHTTP(httptest.NewRecorder(), req); close(done) }()
	select { // the request met the holder and waits
	case <-met:
	case <-time.After(5 * time.Second):
		t.Fatal("the request never met the holder")
	}
	cancel()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("OnClientGone got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnClientGone not called")
	}
	<-done

	// OnUnavailable: Redis is gone.
	down := gin.New()
	down.POST("/x/:id", ginlock.New(client, ginlock.Key(ginlock.Param("id")),
		ginlock.OnUnavailable(func(c *gin.Context, err error) { c.String(598, "down: %v", errors.Is(err, core.ErrUnavailable)) })), leaseKey)
	srv.Kill()
	if w := serve(down, http.MethodPost, "/x/1"); w.Code != 598 || w.Body.String() != "down: true" {
		t.Errorf("OnUnavailable: %d %q", w.Code, w.Body.String())
	}
}

// contended signals every contention an acquire meets.
type contended struct {
	core.NopObserver
	ch chan struct{}
}

func (c contended) Contended(context.Context, core.AcquireInfo, core.Holder, int) {
	select {
	case c.ch <- struct{}{}:
	default:
	}
}
