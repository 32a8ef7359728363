package echolock

import (
	"github.com/labstack/echo/v4"

	"github.com/lockkit/lockkit/guard"
)

// Config configures the middleware: the fields of every lockkit middleware
// configured by a struct, documented once in guard.MiddlewareConfig.
// Client and one of KeyParts, KeyFunc, Keys or KeyFromRoute are required.
// On echo v4, Skipper takes echo's middleware.Skipper values
// (middleware.DefaultSkipper, ...); a misconfigured route is logged once
// through c.Logger() (Errorj); ReleaseErrorHandler's default is
// c.Logger().Error(err); what DenyHandler and ErrorHandler return goes to
// echo's HTTPErrorHandler.
type Config guard.MiddlewareConfig[echo.Context]

// logger is echo v4's logger, c.Logger(), as package guard uses it.
type logger struct{}

func (logger) Misconfigured(c echo.Context, route string, err error) {
	c.Logger().Errorj(map[string]any{"message": "echolock: the route's lock is misconfigured: every request is answered 500", "route": route, "error": err.Error()})
}

func (logger) ReleaseFailed(c echo.Context, err error) { c.Logger().Error(err) }
