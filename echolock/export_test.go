package echolock

import (
	"sync"

	"github.com/labstack/echo/v4"
)

// Tracked is a Config.ToMiddleware that remembers the middlewares it
// builds, and templates is how many route templates their route tables
// hold (tests only).
func Tracked() (toMiddleware func(Config) (echo.MiddlewareFunc, error), templates func() int) {
	var (
		mu    sync.Mutex
		built []*lockMiddleware
	)
	toMiddleware = func(config Config) (echo.MiddlewareFunc, error) {
		m, err := config.build()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		built = append(built, m)
		mu.Unlock()
		return m.wrap, nil
	}
	templates = func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range built {
			n += m.routes.Len()
		}
		return n
	}
	return toMiddleware, templates
}
