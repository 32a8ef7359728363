package main

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/examples/internal/orders"
)

// newRouter serves the orders API. With locked false the lock middleware is
// left out (-nolock). logTo nil: no access log.
func newRouter(client *core.Client, store *orders.Store, locked bool, logTo io.Writer) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	if logTo != nil {
		e.Use(middleware.LoggerWithConfig(middleware.LoggerConfig{Output: logTo}))
	}
	e.Use(middleware.Recover())

	// "order:<id>" on every order route: the same key ginlock and grpclock
	// build, so replicas on gin, echo and gRPC exclude each other.
	lockOrder := echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:order,param:id", TokenHeader: "Lock-Token"})
	// Shipping twice is the classic duplicate click: answer 409 at once
	// rather than queue behind the first.
	shipOnce := echolock.NewWithConfig(echolock.Config{Client: client, KeyParts: "const:order,param:id", NoWait: true, TokenHeader: "Lock-Token"})
	lockTenant := echolock.New(client, "const:tenant,header:X-Tenant")
	if !locked {
		lockOrder, shipOnce, lockTenant = pass, pass, pass
	}

	a := &api{store: store}
	e.GET("/orders/:id", a.get)
	e.POST("/orders/:id/pay", a.pay, lockOrder)
	e.POST("/orders/:id/refund", a.refund, lockOrder)
	e.POST("/orders/:id/ship", a.ship, shipOnce)
	e.POST("/tenant/export", a.export, lockTenant)
	return e
}

func pass(next echo.HandlerFunc) echo.HandlerFunc { return next }

type api struct{ store *orders.Store }

// token is the fencing token of the lock the request holds (0 unlocked):
// the store refuses a write with a token older than the order's last.
func token(c echo.Context) int64 {
	if l, ok := echolock.Lease(c); ok {
		return l.Token()
	}
	return 0
}

func (a *api) get(c echo.Context) error { return c.JSON(http.StatusOK, a.store.Get(c.Param("id"))) }

func (a *api) pay(c echo.Context) error {
	cents, err := orders.ParseAmount(c.QueryParam("amount"))
	if err != nil {
		return reply(c, nil, err)
	}
	// c.Request().Context() ends if the client leaves or the lock is lost.
	o, err := a.store.Pay(c.Request().Context(), c.Param("id"), token(c), cents)
	return reply(c, o, err)
}

func (a *api) refund(c echo.Context) error {
	cents, err := orders.ParseAmount(c.QueryParam("amount"))
	if err != nil {
		return reply(c, nil, err)
	}
	o, err := a.store.Refund(c.Request().Context(), c.Param("id"), token(c), cents)
	return reply(c, o, err)
}

func (a *api) ship(c echo.Context) error {
	o, err := a.store.Ship(c.Request().Context(), c.Param("id"), token(c))
	return reply(c, o, err)
}

func (a *api) export(c echo.Context) error {
	e, err := a.store.Export(c.Request().Context(), c.Request().Header.Get("X-Tenant"), token(c))
	return reply(c, e, err)
}

func reply(c echo.Context, v any, err error) error {
	if err != nil {
		return echo.NewHTTPError(orders.HTTPStatus(err), err.Error()).SetInternal(err)
	}
	return c.JSON(http.StatusOK, v)
}
