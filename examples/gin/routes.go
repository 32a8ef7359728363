package main

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/ginlock"
)

// newRouter serves the orders API. With locked false the lock middleware is
// left out (the benchmark's baseline, and -nolock). logTo nil: no access log.
func newRouter(client *core.Client, store *orders.Store, locked bool, logTo io.Writer) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	if logTo != nil {
		r.Use(gin.LoggerWithWriter(logTo))
	}
	r.Use(gin.Recovery())

	orderKey := ginlock.Key(ginlock.Const("order"), ginlock.Param("id")) // "order:<id>" on every order route
	lockOrder := ginlock.New(client, orderKey, ginlock.TokenHeader("Lock-Token"))
	// Shipping twice is the classic duplicate click: answer 409 at once
	// rather than queue behind the first.
	shipOnce := ginlock.New(client, orderKey, ginlock.NoWait(), ginlock.TokenHeader("Lock-Token"))
	lockTenant := ginlock.New(client, ginlock.Key(ginlock.Const("tenant"), ginlock.Header("X-Tenant")))
	if !locked {
		lockOrder, shipOnce, lockTenant = gin.HandlerFunc(pass), gin.HandlerFunc(pass), gin.HandlerFunc(pass)
	}

	a := &api{store: store}
	r.GET("/orders/:id", a.get)
	r.POST("/orders/:id/pay", lockOrder, a.pay)
	r.POST("/orders/:id/refund", lockOrder, a.refund)
	r.POST("/orders/:id/ship", shipOnce, a.ship)
	r.POST("/tenant/export", lockTenant, a.export)
	return r
}

func pass(c *gin.Context) { c.Next() }

type api struct{ store *orders.Store }

// token is the fencing token of the lock the request holds (0 unlocked):
// the store refuses a write with a token older than the order's last.
func token(c *gin.Context) int64 {
	if l, ok := ginlock.Lease(c); ok {
		return l.Token()
	}
	return 0
}

func (a *api) get(c *gin.Context) { c.JSON(http.StatusOK, a.store.Get(c.Param("id"))) }

func (a *api) pay(c *gin.Context) {
	cents, err := orders.ParseAmount(c.Query("amount"))
	if err != nil {
		reply(c, nil, err)
		return
	}
	// c.Request.Context() ends if the client leaves or the lock is lost.
	o, err := a.store.Pay(c.Request.Context(), c.Param("id"), token(c), cents)
	reply(c, o, err)
}

func (a *api) refund(c *gin.Context) {
	cents, err := orders.ParseAmount(c.Query("amount"))
	if err != nil {
		reply(c, nil, err)
		return
	}
	o, err := a.store.Refund(c.Request.Context(), c.Param("id"), token(c), cents)
	reply(c, o, err)
}

func (a *api) ship(c *gin.Context) {
	o, err := a.store.Ship(c.Request.Context(), c.Param("id"), token(c))
	reply(c, o, err)
}

func (a *api) export(c *gin.Context) {
	e, err := a.store.Export(c.Request.Context(), c.GetHeader("X-Tenant"), token(c))
	reply(c, e, err)
}

func reply(c *gin.Context, v any, err error) {
	if err != nil {
		c.JSON(orders.HTTPStatus(err), gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, v)
}
