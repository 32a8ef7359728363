package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
)

// OptionCase is one configuration of the options every adapter shares, and
// what guard.Config.Check says of it. Each adapter's tests run every case
// through its own constructor (RunOptionCases: ginlock.New, echolock's
// ToMiddleware, grpclock's interceptors...), so the same option is accepted
// or refused, with the same message, everywhere.
type OptionCase struct {
	Name           string
	NoClient       bool
	Wait           time.Duration
	NoWait         bool
	TTL            time.Duration
	MaxHold        time.Duration
	ReleaseTimeout time.Duration
	AcquireOptions []core.AcquireOption
	Limit          int
	Side           core.Side
	// AlsoSide is a second side option given after Side's (functional
	// options only: a configuration struct has one ReadWrite field, and
	// its adapter's build returns ErrNotExpressible).
	AlsoSide core.Side
	Keys     int // key options given (0 and 1: one)
	// Err is a substring of the construction error; "" when valid.
	Err string
}

// OptionCases are the shared cases.
var OptionCases = []OptionCase{
	{Name: "defaults"},
	{Name: "zero wait is the default budget", Wait: 0},
	{Name: "wait", Wait: time.Second},
	{Name: "no wait", NoWait: true},
	{Name: "ttl at the minimum", TTL: core.MinTTL},
	{Name: "release timeout", ReleaseTimeout: time.Second},
	{Name: "max hold", MaxHold: time.Second},
	{Name: "other acquire options", AcquireOptions: []core.AcquireOption{core.Reentrant(), core.MaxWaiters(3), core.NoRenew()}},
	{Name: "no client", NoClient: true, Err: "no *core.Client"},
	{Name: "negative wait", Wait: -time.Second, Err: "Wait must be ≥ 0"},
	{Name: "no wait and wait", NoWait: true, Wait: time.Second, Err: "both NoWait and Wait"},
	{Name: "ttl below the minimum", TTL: 5 * time.Millisecond, Err: "TTL must be at least"},
	{Name: "negative ttl", TTL: -time.Second, Err: "TTL must be at least"},
	{Name: "negative release timeout", ReleaseTimeout: -time.Second, Err: "ReleaseTimeout must be ≥ 0"},
	{Name: "negative max hold", MaxHold: -time.Second, Err: "MaxHold must be ≥ 0"},
	{Name: "core.MaxHold in AcquireOptions", AcquireOptions: []core.AcquireOption{core.MaxHold(time.Second)}, Err: "AcquireOptions may not carry"},
	{Name: "core.Wait in AcquireOptions", AcquireOptions: []core.AcquireOption{core.Wait(time.Second)}, Err: "AcquireOptions may not carry"},
	{Name: "core.NoWait in AcquireOptions", AcquireOptions: []core.AcquireOption{core.NoWait()}, Err: "AcquireOptions may not carry"},
	{Name: "core.TTL in AcquireOptions", AcquireOptions: []core.AcquireOption{core.TTL(time.Second)}, Err: "AcquireOptions may not carry"},
	{Name: "core.Name in AcquireOptions", AcquireOptions: []core.AcquireOption{core.Name("x")}, Err: "AcquireOptions may not carry"},
	{Name: "core.MaxWaiters(-1) in AcquireOptions", AcquireOptions: []core.AcquireOption{core.MaxWaiters(-1)}, Err: "MaxWaiters must be ≥ 0"},
	{Name: "limit", Limit: 3},
	{Name: "limit with no wait", Limit: 3, NoWait: true},
	{Name: "negative limit", Limit: -1, Err: "Limit must be 1 to"},
	{Name: "limit above the maximum", Limit: core.MaxPermits + 1, Err: "Limit must be 1 to"},
	{Name: "read side", Side: core.ReadSide},
	{Name: "write side", Side: core.WriteSide},
	{Name: "limit and a read/write side", Limit: 2, Side: core.WriteSide, Err: "Limit and a read/write side are alternatives"},
	{Name: "read side and write side", Side: core.ReadSide, AlsoSide: core.WriteSide, Err: "the read side and the write side are alternatives"},
	{Name: "write side and read side", Side: core.WriteSide, AlsoSide: core.ReadSide, Err: "the read side and the write side are alternatives"},
	{Name: "read side twice", Side: core.ReadSide, AlsoSide: core.ReadSide},
	{Name: "two keys", Keys: 2},
	{Name: "two keys and a limit", Keys: 2, Limit: 2, Err: "several keys are taken together"},
	{Name: "two keys and a read/write side", Keys: 2, Side: core.ReadSide, Err: "several keys are taken together"},
}

// ErrNotExpressible is what an adapter's build returns for an OptionCase
// its configuration cannot state (two side options in one struct field):
// RunOptionCases skips the case.
var ErrNotExpressible = errors.New("the adapter's configuration cannot state this case")

// RunOptionCases builds the adapter once per case with build, which returns
// what construction said: nil when it succeeded, else its error (or its
// panic, through Panic). A refused case must be refused with a message
// that starts with prefix (e.g. "ginlock: New: ") and names the rule.
func RunOptionCases(t *testing.T, prefix string, build func(tc OptionCase) error) {
	t.Helper()
	runCases(t, prefix, OptionCases, func(tc OptionCase) (string, string) { return tc.Name, tc.Err }, build)
}

// IdempotencyCase is one configuration of the idempotency options every
// HTTP adapter shares (Idempotency, as the adapter's options), and what
// guard.IdempotencyConfig.Check says of it.
type IdempotencyCase struct {
	Name     string
	NoClient bool
	Idempotency
	// Err is a substring of the construction error; "" when valid.
	Err string
}

// IdempotencyCases are the shared cases.
var IdempotencyCases = []IdempotencyCase{
	{Name: "defaults"},
	{Name: "every option", Idempotency: Idempotency{Header: "X-Request-Id-Key", Required: true, Methods: []string{"POST", "PUT"},
		Scope: "header:X-Tenant,cookie:session", MaxBody: 1 << 10, MaxAnswer: 1 << 10, Retention: time.Hour, Wait: time.Second,
		TTL: core.MinTTL, MaxHold: time.Minute, StoreEveryAnswer: true, FailOpen: true, ReplayHeaders: []string{"X-Payment-Id"}}},
	{Name: "no client", NoClient: true, Err: "no *core.Client"},
	{Name: "bad header", Idempotency: Idempotency{Header: "Idempotency Key"}, Err: "is not a header name"},
	{Name: "methods given none", Idempotency: Idempotency{Methods: []string{}}, Err: "without a method"},
	{Name: "bad method", Idempotency: Idempotency{Methods: []string{"PO ST"}}, Err: "is not a method"},
	{Name: "negative max body", Idempotency: Idempotency{MaxBody: -1}, Err: "MaxBody must be between"},
	{Name: "max body over the bound", Idempotency: Idempotency{MaxBody: 64<<20 + 1}, Err: "MaxBody must be between"},
	{Name: "negative max answer", Idempotency: Idempotency{MaxAnswer: -1}, Err: "MaxAnswer must be between"},
	{Name: "retention below a second", Idempotency: Idempotency{Retention: time.Millisecond}, Err: "Retention must be 0"},
	{Name: "negative wait", Idempotency: Idempotency{Wait: -time.Second}, Err: "Wait must be ≥ 0"},
	{Name: "ttl below the minimum", Idempotency: Idempotency{TTL: 5 * time.Millisecond}, Err: "TTL must be at least"},
	{Name: "negative max hold", Idempotency: Idempotency{MaxHold: -time.Second}, Err: "MaxHold must be ≥ 0"},
	{Name: "Set-Cookie replayed", Idempotency: Idempotency{ReplayHeaders: []string{"Set-Cookie"}}, Err: "is never replayed"},
	{Name: "a trace header replayed", Idempotency: Idempotency{ReplayHeaders: []string{"traceparent"}}, Err: "is never replayed"},
	{Name: "bad scope", Idempotency: Idempotency{Scope: "body:amount"}, Err: "unknown source"},
}

// RunIdempotencyOptionCases builds a's idempotency middleware once per
// case (Adapter.Idempotent, on a Client that never connects). A refused
// case must be refused with a message that starts with prefix (e.g.
// "ginlock: Idempotent: ") and names the rule, the same in every adapter.
func RunIdempotencyOptionCases(t *testing.T, a Adapter, prefix string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1}) // never dialled: construction only
	t.Cleanup(func() { _ = rdb.Close() })
	client, err := core.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	runCases(t, prefix, IdempotencyCases, func(tc IdempotencyCase) (string, string) { return tc.Name, tc.Err }, func(tc IdempotencyCase) error {
		c := client
		if tc.NoClient {
			c = nil
		}
		return a.Idempotent(c, tc.Idempotency)
	})
}

// runCases runs cases through build: each accepted, or refused with a
// message that starts with prefix and holds the case's error.
func runCases[C any](t *testing.T, prefix string, cases []C, about func(C) (name, want string), build func(C) error) {
	t.Helper()
	for _, tc := range cases {
		name, want := about(tc)
		t.Run(name, func(t *testing.T) {
			err := build(tc)
			switch {
			case errors.Is(err, ErrNotExpressible):
				t.Skip(err)
			case want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case want != "" && err == nil:
				t.Fatalf("accepted, want refused saying %q", want)
			case want != "" && (!strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), want)):
				t.Fatalf("refused with %q, want %q...%q", err, prefix, want)
			}
		})
	}
}

// Panic runs f and returns its panic as an error (nil when it returned).
func Panic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// KindOptions are an adapter's options for tc's Limit, read/write side
// and extra keys, from the adapter's own constructors (read and write may
// be nil for an adapter without that side).
func KindOptions[O any](tc OptionCase, limit func(int) O, read, write, extraKey func() O) []O {
	var opts []O
	if tc.Limit != 0 {
		opts = append(opts, limit(tc.Limit))
	}
	for _, s := range []core.Side{tc.Side, tc.AlsoSide} {
		switch {
		case s == core.ReadSide && read != nil:
			opts = append(opts, read())
		case s == core.WriteSide && write != nil:
			opts = append(opts, write())
		}
	}
	for range tc.Keys - 1 {
		opts = append(opts, extraKey())
	}
	return opts
}
