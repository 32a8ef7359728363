package conformance

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Adapter serves one replica's routes with one framework and its lock
// adapter: what an adapter's own test supplies, so that the suite runs
// against it (Run, RunPair, FuzzCanonicalKey, Flood). It maps each Route
// onto the adapter's options; a Route asks nothing an adapter following
// the lockkit contract lacks. Give one of Build and Listen.
type Adapter struct {
	Name string
	// Build serves routes as an http.Handler (a framework on net/http);
	// the suite serves it on a loopback listener of its own, with each
	// Route's Deadline put on the request's context in front of it.
	Build func(t testing.TB, client *core.Client, routes ...Route) http.Handler
	// Listen serves routes on a loopback listener of the framework's own
	// (a framework on its own HTTP stack: fiber on fasthttp), until t ends,
	// and returns it. It puts each Route's Deadline on the request's
	// context in front of the lock itself (RouteDeadline).
	Listen func(t testing.TB, client *core.Client, routes ...Route) Server
	// Traits are what the framework does otherwise than net/http that a
	// scenario must know; zero for a framework on net/http.
	Traits Traits
	// Idempotent builds the adapter's idempotency middleware from x on
	// client (nil: none) and returns what construction said: nil, or its
	// error (or its panic, through Panic). RunIdempotencyOptionCases runs
	// it; Build and Listen map a Route's Idempotency themselves.
	Idempotent func(client *core.Client, x Idempotency) error
}

// Server is a replica an Adapter's Listen started.
type Server struct {
	// URL is its base URL, "http://127.0.0.1:<port>".
	URL string
	// Shutdown stops it gracefully: no new request, those in flight
	// answered (http.Server.Shutdown, fiber's ShutdownWithContext).
	Shutdown func(ctx context.Context) error
}

// Traits are what a framework does otherwise than net/http.
type Traits struct {
	// ClientGoneUnseen: a request's context does not end when its client
	// goes away (fasthttp does not watch the connection while a handler
	// runs), so the scenarios of a client hanging up (ClientHangsUp,
	// ClientGoneWhileWaiting) skip, saying so.
	ClientGoneUnseen bool
	// Buffered: the framework reads a request's body before its handlers
	// run and writes the answer after they return (fasthttp, unless it
	// streams bodies), so no handler waits on its client; MaxHoldBlocked
	// checks instead that a client dribbling its body holds no lock.
	Buffered bool
	// PathPlusIsSpace: the framework decodes a '+' in a path parameter as
	// a space, as in a query string (fiber with UnescapePath): its handlers
	// read "/orders/a+b" as the id "a b", and so does the lock, where other
	// frameworks read "a+b" (FuzzCanonicalKey expects that).
	PathPlusIsSpace bool
}

// RouteDeadline is the Deadline of the route of routes that method and
// path (a request's, as sent) match, 0 when none: what a Listen adapter
// puts on the request's context in front of the lock.
func RouteDeadline(routes []Route, method, path string) time.Duration {
	for _, rt := range routes {
		if rt.Deadline > 0 && method == rt.Method && matches(rt.Group+rt.Path, path) {
			return rt.Deadline
		}
	}
	return 0
}

// Route is one locked route, described so that every framework can serve it.
type Route struct {
	Method, Path string // "/orders/:id/pay": gin and echo share the syntax (BracePath gives ServeMux's and chi's)
	// Key is the key spec, "const:order,param:id" (guard.ParseSpec reads
	// it): the adapter's Const, Param, Header, Query and Cookie parts, in
	// order, as Key(parts...). With Idempotency, a Key "" without
	// KeyFromRoute is a route with no lock: idempotency alone.
	Key string
	// Idempotency, when set, puts the adapter's idempotency middleware
	// (Idempotent) on the route, in front of its lock.
	Idempotency *Idempotency
	// KeyFromRoute keys by the route instead of Key (the adapter's
	// KeyFromRoute).
	KeyFromRoute bool
	Wait         time.Duration
	NoWait       bool
	TTL          time.Duration
	MaxHold      time.Duration
	FailOpen     bool
	TokenHeader  string
	// Deadline, when set, is put on the request's context of the route's
	// requests by the suite, in front of the adapter's handler (as
	// gin-contrib/timeout or a gateway would): Build need not map it.
	Deadline time.Duration
	// ReleaseError, when set, is the adapter's release-error hook
	// (OnReleaseError, echo's ReleaseErrorHandler).
	ReleaseError func(error)
	// Group, when set, is a path prefix: the lock middleware is installed
	// with the group's Use (r.Group(Group, lock)) rather than on the route,
	// so it also sees the group's unmatched paths and methods, and Path is
	// relative to the group. A router without groups wraps each route.
	Group string
	// Limit, RW and MoreKeys are the lock's kind: a semaphore of Limit per
	// key, a side of a read/write lock, or more key specs taken together
	// with Key (all or nothing).
	Limit    int
	RW       RW
	MoreKeys []string
	// AcquireOptions are passed through the adapter's AcquireOptions
	// (echo: Config.AcquireOptions): core options the adapter has none of
	// its own for, such as core.MaxWaiters.
	AcquireOptions []core.AcquireOption
	// NilResponders gives each of the adapter's On* responders a custom
	// answer and then nil (echo's DenyHandler and ErrorHandler, fields,
	// are left nil): a nil responder means the default answer in every
	// adapter, so the route answers as if it had none.
	NilResponders bool
	// CORS, when set, puts the framework's common CORS middleware on the
	// route, before the lock or after it (gin: gin-contrib/cors; echo: its
	// middleware.CORS; net/http: rs/cors; chi: go-chi/cors), allowing
	// CORSOrigin, and configured to pass OPTIONS on to the handler where it
	// can (OptionsPassthrough): whatever it passes on must be locked.
	CORS    CORSPlace
	Handler Handler
}

// CORSOrigin is the origin a Route's CORS middleware allows.
const CORSOrigin = "https://app.example"

// CORSPlace is where a Route's CORS middleware runs, relative to the lock.
type CORSPlace uint8

// CORS placements.
const (
	CORSNone   CORSPlace = iota
	CORSBefore           // the CORS middleware runs first (the place the docs advise)
	CORSAfter            // the lock runs first
)

func (p CORSPlace) String() string {
	switch p {
	case CORSBefore:
		return "CORS before the lock"
	case CORSAfter:
		return "CORS after the lock"
	}
	return "no CORS middleware"
}

// RW is which side of a read/write lock a route takes.
type RW uint8

// Read/write modes.
const (
	RWNone     RW = iota // a mutex (or a permit, with Limit)
	RWByMethod           // the read side for GET and HEAD, the write side otherwise (ReadWrite())
	RWRead               // always the read side (ReadSide())
	RWWrite              // always the write side (WriteSide())
)

// BracePath is path with each ":name" segment written "{name}":
// "/orders/:id/pay" becomes "/orders/{id}/pay", the syntax of ServeMux's
// and chi's patterns, for a builder of such a router.
func BracePath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// KeySpecs are every key spec of rt: Key, then MoreKeys.
func (rt Route) KeySpecs() []string { return append([]string{rt.Key}, rt.MoreKeys...) }

// Handler is a route's handler, free of any framework: r is the request as
// the handler sees it (r.Context() is the handler's context); lease and ok
// are what the adapter's Lease accessor returned.
type Handler func(w http.ResponseWriter, r *http.Request, lease *core.Lease, ok bool)

// Locked reports whether rt has a lock: a key source (a route with
// Idempotency may have none).
func (rt Route) Locked() bool { return rt.Key != "" || rt.KeyFromRoute }

// Idempotency is a route's idempotency middleware, as the adapter's
// options (guard.IdempotencyConfig documents each): the zero value is the
// defaults.
type Idempotency struct {
	Header   string
	Required bool
	// Methods, when not nil, are given (IdempotencyMethods); an empty
	// non-nil slice gives the option with no method.
	Methods []string
	// Scope is a key spec ("header:X-Tenant"), given as the adapter's
	// IdempotencyScope parts (echo's: the spec).
	Scope              string
	MaxBody, MaxAnswer int64
	Retention, Wait    time.Duration
	TTL, MaxHold       time.Duration
	StoreEveryAnswer   bool
	FailOpen           bool
	ReplayHeaders      []string
}
