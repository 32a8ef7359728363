package conformance

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	echo4 "github.com/labstack/echo/v4"
	echo4mw "github.com/labstack/echo/v4/middleware"
	echo5 "github.com/labstack/echo/v5"
	echo5mw "github.com/labstack/echo/v5/middleware"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/echo5lock"
	"github.com/lockkit/lockkit/echolock"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/guard"
)

// Route is one locked route, described so that every framework can serve it.
type Route struct {
	Method, Path string // "/orders/:id/pay": gin and echo share the syntax
	Key          string // key spec, "const:order,param:id"
	Wait         time.Duration
	NoWait       bool
	TTL          time.Duration
	MaxHold      time.Duration
	FailOpen     bool
	TokenHeader  string
	// Deadline, when set, is put on the request's context by a middleware in
	// front of the lock (as gin-contrib/timeout or a gateway would).
	Deadline time.Duration
	// ReleaseError, when set, is the adapter's release-error hook
	// (ginlock.OnReleaseError, Config.ReleaseErrorHandler).
	ReleaseError func(error)
	// Group, when set, is a path prefix: the lock middleware is installed
	// with the group's Use (r.Group(Group, lock)) rather than on the route,
	// so it also sees the group's unmatched paths and methods, and Path is
	// relative to the group.
	Group string
	// Limit, RW and MoreKeys are the lock's kind: a semaphore of Limit per
	// key, a side of a read/write lock, or more key specs taken together
	// with Key (all or nothing).
	Limit    int
	RW       RW
	MoreKeys []string
	Handler  Handler
}

// RW is which side of a read/write lock a route takes.
type RW uint8

// Read/write modes.
const (
	RWNone     RW = iota // a mutex (or a permit, with Limit)
	RWByMethod           // the read side for GET and HEAD, the write side otherwise
	RWRead               // always the read side
	RWWrite              // always the write side
)

// kindOptions are a functional-options adapter's options for rt's Limit
// and read/write mode, from its constructors.
func kindOptions[O any](rt Route, limit func(int) O, byMethod, read, write func() O) []O {
	var opts []O
	if rt.Limit > 0 {
		opts = append(opts, limit(rt.Limit))
	}
	switch rt.RW {
	case RWByMethod:
		opts = append(opts, byMethod())
	case RWRead:
		opts = append(opts, read())
	case RWWrite:
		opts = append(opts, write())
	}
	return opts
}

// rwNames are the echo configs' ReadWrite values.
var rwNames = map[RW]string{RWByMethod: "method", RWRead: "read", RWWrite: "write"}

// keySpecs are every key spec of rt: Key, then MoreKeys.
func (rt Route) keySpecs() []string { return append([]string{rt.Key}, rt.MoreKeys...) }

// Handler is a route's handler, free of any framework: r is the request as
// the handler sees it (r.Context() is the handler's context); lease and ok
// are what the adapter's Lease accessor returned.
type Handler func(w http.ResponseWriter, r *http.Request, lease *core.Lease, ok bool)

// Adapter builds one replica's HTTP handler serving routes with one
// framework and its lock adapter.
type Adapter struct {
	Name  string
	Build func(t testing.TB, client *core.Client, routes ...Route) http.Handler
}

// Gin serves routes with gin (Recovery in front) and ginlock.
var Gin = Adapter{Name: "gin", Build: buildGin}

// Echo serves routes with echo v4 (Recover in front) and echolock.
var Echo = Adapter{Name: "echo", Build: buildEcho}

// Echo5 serves routes with echo v5 (Recover in front) and echo5lock.
var Echo5 = Adapter{Name: "echo5", Build: buildEcho5}

// Adapters are all of them.
var Adapters = []Adapter{Gin, Echo, Echo5, Stdlib, Chi}

// partsOf turns a route's key spec into an adapter's parts, with ctors the
// adapter's part constructor for each source.
func partsOf[P any](t testing.TB, rt Route, ctors map[string]func(string) P) []P {
	return partsOfSpec(t, rt, rt.Key, ctors)
}

// partsOfSpec is partsOf for one of rt's key specs.
func partsOfSpec[P any](t testing.TB, rt Route, spec string, ctors map[string]func(string) P) []P {
	specs, err := guard.ParseSpec(spec)
	if err != nil {
		t.Fatalf("route %s: %v", rt.Path, err)
	}
	parts := make([]P, len(specs))
	for i, s := range specs {
		parts[i] = ctors[s.Source](s.Name)
	}
	return parts
}

func withDeadline(r *http.Request, d time.Duration) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return r.WithContext(ctx), cancel
}

func buildGin(t testing.TB, client *core.Client, routes ...Route) http.Handler {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.Use(gin.RecoveryWithWriter(io.Discard)) // the panic scenario panics on purpose
	for _, rt := range routes {
		var opts []ginlock.Option
		for _, spec := range rt.keySpecs() {
			opts = append(opts, ginlock.Key(partsOfSpec(t, rt, spec, map[string]func(string) ginlock.Part{
				"const": ginlock.Const, "param": ginlock.Param, "header": ginlock.Header,
				"query": ginlock.Query, "cookie": ginlock.Cookie,
			})...))
		}
		opts = append(opts, ginlock.Wait(rt.Wait), ginlock.TTL(rt.TTL), ginlock.MaxHold(rt.MaxHold))
		opts = append(opts, kindOptions(rt, ginlock.Limit, ginlock.ReadWrite, ginlock.ReadSide, ginlock.WriteSide)...)
		if rt.NoWait {
			opts = append(opts, ginlock.NoWait())
		}
		if rt.FailOpen {
			opts = append(opts, ginlock.FailOpen())
		}
		if rt.TokenHeader != "" {
			opts = append(opts, ginlock.TokenHeader(rt.TokenHeader))
		}
		if f := rt.ReleaseError; f != nil {
			opts = append(opts, ginlock.OnReleaseError(func(_ *gin.Context, err error) { f(err) }))
		}
		var chain []gin.HandlerFunc
		if d := rt.Deadline; d > 0 {
			chain = append(chain, func(c *gin.Context) {
				var cancel context.CancelFunc
				c.Request, cancel = withDeadline(c.Request, d)
				defer cancel()
				c.Next()
			})
		}
		h := rt.Handler
		final := func(c *gin.Context) {
			l, ok := ginlock.Lease(c)
			h(c.Writer, c.Request, l, ok)
		}
		if rt.Group != "" {
			e.Group(rt.Group, append(chain, ginlock.New(client, opts...))...).Handle(rt.Method, rt.Path, final)
			continue
		}
		chain = append(chain, ginlock.New(client, opts...), final)
		e.Handle(rt.Method, rt.Path, chain...)
	}
	return e
}

func buildEcho(t testing.TB, client *core.Client, routes ...Route) http.Handler {
	e := echo4.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(echo4mw.RecoverWithConfig(echo4mw.RecoverConfig{DisablePrintStack: true}))
	for _, rt := range routes {
		var mws []echo4.MiddlewareFunc
		if d := rt.Deadline; d > 0 {
			mws = append(mws, func(next echo4.HandlerFunc) echo4.HandlerFunc {
				return func(c echo4.Context) error {
					r, cancel := withDeadline(c.Request(), d)
					defer cancel()
					c.SetRequest(r)
					return next(c)
				}
			})
		}
		cfg := echolock.Config{
			Client: client, KeyParts: rt.Key, Wait: rt.Wait, NoWait: rt.NoWait, TTL: rt.TTL, MaxHold: rt.MaxHold,
			FailOpen: rt.FailOpen, TokenHeader: rt.TokenHeader, Limit: rt.Limit, ReadWrite: rwNames[rt.RW],
		}
		if len(rt.MoreKeys) > 0 {
			cfg.KeyParts, cfg.Keys = "", rt.keySpecs()
		}
		if f := rt.ReleaseError; f != nil {
			cfg.ReleaseErrorHandler = func(_ echo4.Context, err error) { f(err) }
		}
		mw, err := cfg.ToMiddleware()
		if err != nil {
			t.Fatalf("route %s: %v", rt.Path, err)
		}
		h := rt.Handler
		final := func(c echo4.Context) error {
			l, ok := echolock.Lease(c)
			h(c.Response(), c.Request(), l, ok)
			return nil
		}
		if rt.Group != "" {
			e.Group(rt.Group, append(mws, mw)...).Add(rt.Method, rt.Path, final)
			continue
		}
		e.Add(rt.Method, rt.Path, final, append(mws, mw)...)
	}
	return e
}

func buildEcho5(t testing.TB, client *core.Client, routes ...Route) http.Handler {
	e := echo5.New()
	recoverMW, err := echo5mw.RecoverConfig{DisablePrintStack: true}.ToMiddleware()
	if err != nil {
		t.Fatal(err)
	}
	e.Use(recoverMW)
	for _, rt := range routes {
		var mws []echo5.MiddlewareFunc
		if d := rt.Deadline; d > 0 {
			mws = append(mws, func(next echo5.HandlerFunc) echo5.HandlerFunc {
				return func(c *echo5.Context) error {
					r, cancel := withDeadline(c.Request(), d)
					defer cancel()
					c.SetRequest(r)
					return next(c)
				}
			})
		}
		cfg := echo5lock.Config{
			Client: client, KeyParts: rt.Key, Wait: rt.Wait, NoWait: rt.NoWait, TTL: rt.TTL, MaxHold: rt.MaxHold,
			FailOpen: rt.FailOpen, TokenHeader: rt.TokenHeader, Limit: rt.Limit, ReadWrite: rwNames[rt.RW],
		}
		if len(rt.MoreKeys) > 0 {
			cfg.KeyParts, cfg.Keys = "", rt.keySpecs()
		}
		if f := rt.ReleaseError; f != nil {
			cfg.ReleaseErrorHandler = func(_ *echo5.Context, err error) { f(err) }
		}
		mw, err := cfg.ToMiddleware()
		if err != nil {
			t.Fatalf("route %s: %v", rt.Path, err)
		}
		h := rt.Handler
		final := func(c *echo5.Context) error {
			l, ok := echo5lock.Lease(c)
			h(c.Response(), c.Request(), l, ok)
			return nil
		}
		if rt.Group != "" {
			e.Group(rt.Group, append(mws, mw)...).Add(rt.Method, rt.Path, final)
			continue
		}
		e.Add(rt.Method, rt.Path, final, append(mws, mw)...)
	}
	return e
}
