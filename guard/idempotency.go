package guard

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"time"

	"github.com/lockkit/lockkit/core"
	"golang.org/x/net/http/httpguts"
)

// Idempotency is the other half of a lock on a payment handler: a lock
// makes concurrent requests take turns, but the duplicate handlers meet
// most is the retry (a client timed out and sends the same POST again),
// which a lock lets run twice. With Idempotency a request carrying an
// idempotency key (draft-ietf-httpapi-idempotency-key-header) runs once;
// its retries get its stored answer.
//
// This is the HTTP half of it that needs no Redis, one implementation for
// every adapter: reading the key (ParseIdempotencyKey), which methods carry
// one (Applies), the record's key (RecordKey: method, route, scope and key,
// hashed) and the request's fingerprint (Fingerprint), the body buffered
// under a cap (ReadBody), the handler's answer captured (ResponseCapture),
// encoded for the record and replayed (EncodeResponse, DecodeResponse,
// Response.Write), whether it is stored (Stores), and the middleware's own
// answers (IdempotencyAnswer). core keeps the records; the pieces go in
// this order (IdempotencyPolicy.Serve): key, record key (a request refused
// for its scope buffers no body), body, fingerprint, claim.
type Idempotency[R any] struct {
	rd      HTTPReader[R]
	cfg     IdempotencyConfig[R]
	allowed map[string]bool // canonical header names an answer may replay
}

// IdempotencyConfig is a route's idempotency, as values: what the
// IdempotencyOption functions set and NewIdempotency checks.
type IdempotencyConfig[R any] struct {
	// Header is the request header carrying the key ("":
	// DefaultIdempotencyHeader).
	Header string
	// Required answers 400 to a request of an idempotent method without a
	// key; otherwise such a request runs as it would without idempotency.
	Required bool
	// Methods are the methods whose requests carry a key (nil: POST and
	// PATCH, the methods that are not idempotent by definition).
	Methods []string
	// Scope are the parts, made as lock key parts are (Header, Cookie,
	// Func: the tenant, the authenticated principal), that the record's
	// key also holds, so that one key never replays another tenant's or
	// another principal's answer. Every part is required, as in a lock
	// key.
	Scope []Part[R]
	// MaxBody is the largest request body buffered for the fingerprint, in
	// bytes (0: DefaultMaxBody); a larger one is answered 413, never run
	// unprotected.
	MaxBody int64
	// MaxAnswer is the largest answer body stored, in bytes (0:
	// DefaultMaxAnswer): the record's size is bounded.
	MaxAnswer int64
	// Retention is how long a completed record is kept and replayed (0:
	// DefaultRetention).
	Retention time.Duration
	// StoreEveryAnswer stores whatever the handler answered once it began,
	// 5xx included (Stripe's rule): the retry gets the failure instead of
	// running again.
	StoreEveryAnswer bool
	// ReplayHeaders are answer headers replayed besides the default
	// allow-list (Content-Type, Location, ETag, Last-Modified,
	// Content-Language, Link). A header that must never be replayed
	// (Set-Cookie, Date, Content-Length, hop-by-hop, trace headers) is
	// refused.
	ReplayHeaders []string
	// Wait is how long a request whose key is in progress elsewhere waits
	// for that request's answer to replay it (0: answered 409 with
	// Retry-After at once).
	Wait time.Duration
	// TTL is the claim's lease TTL (0: the Client's): the claim is renewed
	// while the handler runs, so the TTL is how long a crashed replica's
	// claim blocks the key's retries before one takes it over.
	TTL time.Duration
	// MaxHold bounds how long a claim is held (core.MaxHold): then the
	// handler's context ends with cause core.ErrMaxHold and its answer is
	// not stored (the retry runs again). 0: no bound.
	MaxHold time.Duration
	// FailOpen runs the handler without idempotency when Redis is
	// unavailable (the Observer's Unlocked is told); by default such a
	// request is answered 503 (fail-closed), as a lock's is.
	FailOpen bool
	// Skipper skips idempotency for a request when it returns true: the
	// server's choice, never the request's.
	Skipper func(r R) bool

	noMethods bool  // IdempotencyMethods was given none
	err       error // an option that could not be read (IdempotencyScopeSpec)
}

// The defaults of an IdempotencyConfig and its bounds.
const (
	// DefaultMaxBody is the default MaxBody: 1 MiB.
	DefaultMaxBody = 1 << 20
	// DefaultMaxAnswer is the default MaxAnswer: 1 MiB.
	DefaultMaxAnswer = 1 << 20
	// MaxIdempotencyBody bounds MaxBody: a request's body is held in
	// memory. MaxAnswer is bounded by core.MaxPayload, what a record
	// stores.
	MaxIdempotencyBody = 64 << 20
	// DefaultRetention is the default Retention: 24 hours, a day of
	// client retries.
	DefaultRetention = 24 * time.Hour
	// MinRetention is the shortest Retention.
	MinRetention = time.Second
)

// IdempotencyOption sets a field of an IdempotencyConfig: an adapter hands
// its users these, instantiated for its request type, so each option is
// written once.
type IdempotencyOption[R any] func(*IdempotencyConfig[R])

// IdempotencyHeader reads the key from header name instead of
// Idempotency-Key.
func IdempotencyHeader[R any](name string) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Header = name }
}

// IdempotencyRequired answers 400 to a request of an idempotent method
// without a key.
func IdempotencyRequired[R any]() IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Required = true }
}

// IdempotencyMethods are the methods whose requests carry a key, instead
// of POST and PATCH.
func IdempotencyMethods[R any](methods ...string) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) {
		c.Methods = append(c.Methods, methods...)
		c.noMethods = c.noMethods || len(methods) == 0
	}
}

// IdempotencyScope adds parts to the record's scope (IdempotencyConfig.Scope).
func IdempotencyScope[R any](parts ...Part[R]) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Scope = append(c.Scope, parts...) }
}

// IdempotencyMaxBody sets the largest request body, in bytes.
func IdempotencyMaxBody[R any](n int64) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.MaxBody = n }
}

// IdempotencyMaxAnswer sets the largest answer body stored, in bytes.
func IdempotencyMaxAnswer[R any](n int64) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.MaxAnswer = n }
}

// IdempotencyRetention sets how long a completed record is replayed.
func IdempotencyRetention[R any](d time.Duration) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Retention = d }
}

// IdempotencyStoreEveryAnswer stores every answer once the handler began,
// 5xx included.
func IdempotencyStoreEveryAnswer[R any]() IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.StoreEveryAnswer = true }
}

// IdempotencyReplayHeaders adds answer headers to the replayed ones.
func IdempotencyReplayHeaders[R any](names ...string) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.ReplayHeaders = append(c.ReplayHeaders, names...) }
}

// IdempotencyWait waits up to d for the answer of a request in progress
// elsewhere, and replays it, instead of answering 409 at once.
func IdempotencyWait[R any](d time.Duration) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Wait = d }
}

// IdempotencyTTL sets the claim's lease TTL (0: the Client's).
func IdempotencyTTL[R any](d time.Duration) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.TTL = d }
}

// IdempotencyMaxHold bounds how long a claim is held; its answer is then
// not stored.
func IdempotencyMaxHold[R any](d time.Duration) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.MaxHold = d }
}

// IdempotencyFailOpen runs the handler without idempotency when Redis is
// unavailable, instead of answering 503.
func IdempotencyFailOpen[R any]() IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.FailOpen = true }
}

// IdempotencySkipper skips idempotency for the requests f returns true for.
func IdempotencySkipper[R any](f func(r R) bool) IdempotencyOption[R] {
	return func(c *IdempotencyConfig[R]) { c.Skipper = f }
}

// IdempotencyScopeSpec adds the parts of a key spec (ParseSpec:
// "header:X-Tenant,cookie:session"), read by rd, to the record's scope: the
// scope of an adapter whose keys are written as specs (echo's). A spec that
// cannot be read is refused by Check.
func IdempotencyScopeSpec[R any](rd HTTPReader[R], spec string) IdempotencyOption[R] {
	parts, err := ParseParts(rd, spec)
	return func(c *IdempotencyConfig[R]) {
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("scope: %w", err)
		}
		c.Scope = append(c.Scope, parts...)
	}
}

// Check is the one validation of a route's idempotency, so every adapter
// accepts and refuses the same options with the same message; the error
// matches core.ErrInvalidOption.
func (c IdempotencyConfig[R]) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: idempotency: %s", core.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	if c.err != nil {
		return bad("%v", c.err)
	}
	if c.Header != "" && !httpguts.ValidHeaderFieldName(c.Header) {
		return bad("header %q is not a header name", c.Header)
	}
	if c.noMethods {
		return bad("IdempotencyMethods without a method would protect no request")
	}
	for _, m := range c.Methods {
		if !httpguts.ValidHeaderFieldName(m) { // a method is a token, as a header name is
			return bad("method %q is not a method", m)
		}
	}
	for i, p := range c.Scope {
		if p.get == nil {
			return bad("scope part %d: %v", i+1, errZeroPart)
		}
	}
	switch {
	case c.MaxBody < 0 || c.MaxBody > MaxIdempotencyBody:
		return bad("MaxBody must be between 0 (the default, %d) and %d bytes, got %d", DefaultMaxBody, MaxIdempotencyBody, c.MaxBody)
	case c.MaxAnswer < 0 || c.MaxAnswer > core.MaxPayload:
		return bad("MaxAnswer must be between 0 (the default, %d) and %d bytes (core.MaxPayload, what a record stores), got %d", DefaultMaxAnswer, core.MaxPayload, c.MaxAnswer)
	case c.Retention < 0 || (c.Retention > 0 && c.Retention < MinRetention):
		return bad("Retention must be 0 (the default, %v) or at least %v, got %v", DefaultRetention, MinRetention, c.Retention)
	case c.Wait < 0:
		return bad("Wait must be ≥ 0 (0: answer 409 at once), got %v", c.Wait)
	}
	if err := c.claim("").Check(); err != nil {
		return fmt.Errorf("%w (idempotency)", err)
	}
	for _, name := range c.ReplayHeaders {
		if !httpguts.ValidHeaderFieldName(name) {
			return bad("replay header %q is not a header name", name)
		}
		if why := neverReplayed(name); why != "" {
			return bad("header %s is never replayed: %s", textproto.CanonicalMIMEHeaderKey(name), why)
		}
	}
	return nil
}

// NewIdempotency checks the configuration opts give (IdempotencyConfig.Check)
// and returns a route's Idempotency, which reads requests with rd.
func NewIdempotency[R any](rd HTTPReader[R], opts ...IdempotencyOption[R]) (*Idempotency[R], error) {
	var c IdempotencyConfig[R]
	for _, o := range opts {
		o(&c)
	}
	if rd == nil {
		return nil, fmt.Errorf("%w: idempotency: no HTTPReader", core.ErrInvalidOption)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Header == "" {
		c.Header = DefaultIdempotencyHeader
	}
	methods := slices.Clone(c.Methods)
	if len(methods) == 0 {
		methods = []string{http.MethodPost, http.MethodPatch}
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxAnswer == 0 {
		c.MaxAnswer = DefaultMaxAnswer
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	c.Methods, c.Scope = methods, slices.Clone(c.Scope)
	allowed := map[string]bool{}
	for _, name := range append(slices.Clone(defaultReplayHeaders), c.ReplayHeaders...) {
		allowed[textproto.CanonicalMIMEHeaderKey(name)] = true
	}
	return &Idempotency[R]{rd: rd, cfg: c, allowed: allowed}, nil
}

// claim is the core.ClaimRequest of a request to route with fingerprint
// fp under c.
func (c IdempotencyConfig[R]) claim(route string) core.ClaimRequest {
	return core.ClaimRequest{Name: route, TTL: c.TTL, MaxHold: c.MaxHold, FailOpen: c.FailOpen, Wait: c.Wait, Retention: c.Retention}
}

// Config is x's configuration, its defaults filled in.
func (x *Idempotency[R]) Config() IdempotencyConfig[R] { return x.cfg }

// Applies reports whether a request of method carries a key on x's route:
// POST and PATCH by default, the configured Methods otherwise. Methods
// are case-sensitive, as HTTP's are.
func (x *Idempotency[R]) Applies(method string) bool { return slices.Contains(x.cfg.Methods, method) }

// ClientKey is the client's key of r (ParseIdempotencyKey), read from every
// line of the header when x's reader is a HeaderValuesReader, else from
// its first. ok is false, with a nil error, when r sends no key and the
// route does not require one: r runs as it would without idempotency. A
// missing required key is ErrIdempotencyKeyMissing, a bad one
// ErrIdempotencyKey: both answered 400.
func (x *Idempotency[R]) ClientKey(r R) (key string, ok bool, err error) {
	var lines []string
	if hv, multi := x.rd.(HeaderValuesReader[R]); multi {
		lines = hv.HeaderValues(r, x.cfg.Header)
	} else if v := x.rd.Header(r, x.cfg.Header); v != "" {
		lines = []string{v}
	}
	key, ok, err = ParseIdempotencyKey(lines)
	if err == nil && !ok && x.cfg.Required {
		err = fmt.Errorf("%w: this request requires an %s header", ErrIdempotencyKeyMissing, x.cfg.Header)
	}
	return key, ok, err
}
