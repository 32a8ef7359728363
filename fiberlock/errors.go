package fiberlock

import "github.com/lockkit/lockkit/guard"

// ErrNoRouteParam is the error (500) of a key part naming a path parameter
// that the matched route does not have: a mistake in the server's routes,
// not in the request. It is shared by every HTTP adapter.
var ErrNoRouteParam = guard.ErrNoRouteParam
