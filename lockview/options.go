package lockview

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidOption: an option was given a value the view cannot use.
var ErrInvalidOption = errors.New("lockview: invalid option")

// KeyMode says how lock keys appear on the page and in the JSON. Keys name
// orders, accounts, tenants: whoever can read the page should not learn
// them unless the service chose so.
type KeyMode uint8

const (
	// KeyHashed (default) shows core.HashKey(key), the hash otellock records
	// too, so a key seen here can be found on a trace and vice versa.
	KeyHashed KeyMode = iota
	// KeyRaw shows keys as they are.
	KeyRaw
	// KeyHidden shows no key at all; rows keep their telemetry name.
	KeyHidden
)

// String is the mode's name as the JSON reports it.
func (m KeyMode) String() string {
	switch m {
	case KeyRaw:
		return "raw"
	case KeyHidden:
		return "hidden"
	}
	return "hashed"
}

// config is what the options set; New resolves it once.
type config struct {
	keyMode    KeyMode
	window     time.Duration
	maxKeys    int
	samples    int
	recent     int
	topKeys    int
	maxRows    int
	refresh    time.Duration
	maxKeyLen  int
	inspect    bool
	inspectPar int
	inspectPer time.Duration
}

func defaultConfig() config {
	return config{
		keyMode:    KeyHashed,
		window:     time.Minute,
		maxKeys:    256,
		samples:    128,
		recent:     32,
		topKeys:    20,
		maxRows:    200,
		refresh:    2 * time.Second,
		maxKeyLen:  512,
		inspectPar: 2,
		inspectPer: 200 * time.Millisecond,
	}
}

func (c *config) validate() error {
	switch {
	case c.keyMode > KeyHidden:
		return fmt.Errorf("%w: unknown key mode %d", ErrInvalidOption, c.keyMode)
	case c.window <= 0:
		return fmt.Errorf("%w: window %v must be positive", ErrInvalidOption, c.window)
	case c.maxKeys < 1 || c.maxKeys > 1<<16:
		return fmt.Errorf("%w: max keys %d not in [1, 65536]", ErrInvalidOption, c.maxKeys)
	case c.samples < 1 || c.samples > 1<<16:
		return fmt.Errorf("%w: samples per key %d not in [1, 65536]", ErrInvalidOption, c.samples)
	case c.recent < 1 || c.recent > 1<<12:
		return fmt.Errorf("%w: recent events %d not in [1, 4096]", ErrInvalidOption, c.recent)
	case c.topKeys < 1 || c.topKeys > c.maxKeys:
		return fmt.Errorf("%w: top keys %d not in [1, max keys %d]", ErrInvalidOption, c.topKeys, c.maxKeys)
	case c.maxRows < 1:
		return fmt.Errorf("%w: max rows %d must be positive", ErrInvalidOption, c.maxRows)
	case c.refresh < 0:
		return fmt.Errorf("%w: refresh %v is negative", ErrInvalidOption, c.refresh)
	case c.maxKeyLen < 1:
		return fmt.Errorf("%w: max key length %d must be positive", ErrInvalidOption, c.maxKeyLen)
	case c.inspectPar < 1:
		return fmt.Errorf("%w: inspect concurrency %d must be positive", ErrInvalidOption, c.inspectPar)
	case c.inspectPer < 0:
		return fmt.Errorf("%w: inspect interval %v is negative", ErrInvalidOption, c.inspectPer)
	}
	return nil
}

// Option configures a View.
type Option func(*config)

// WithKeys sets how keys are shown (default KeyHashed).
func WithKeys(m KeyMode) Option { return func(c *config) { c.keyMode = m } }

// WithWindow sets the recent window the hot keys' wait percentiles cover
// (default one minute). Samples older than the window are not counted.
func WithWindow(d time.Duration) Option { return func(c *config) { c.window = d } }

// WithMaxKeys bounds how many distinct keys the hot-key table tracks
// (default 256). When it is full, a new key replaces the coldest of a few
// sampled entries, so a flood of distinct keys churns the cold end of the
// table and never grows it.
func WithMaxKeys(n int) Option { return func(c *config) { c.maxKeys = n } }

// WithSamples sets the size of each tracked key's ring of recent waits
// (default 128): the counts and percentiles are over at most that many of
// the key's last acquires within the window, and a key that had more says
// so (HotKey.Capped) with the time they cover (HotKey.Covers).
func WithSamples(n int) Option { return func(c *config) { c.samples = n } }

// WithRecent sets how many recent losses and recent Redis errors are kept
// (default 32 each).
func WithRecent(n int) Option { return func(c *config) { c.recent = n } }

// WithTopKeys sets how many of the hottest keys are shown (default 20).
func WithTopKeys(n int) Option { return func(c *config) { c.topKeys = n } }

// WithMaxRows bounds the rows of held and awaited locks in one response
// (default 200); the total is reported beside them.
func WithMaxRows(n int) Option { return func(c *config) { c.maxRows = n } }

// WithRefresh sets how often the HTML page reloads itself (default 2s;
// 0: never).
func WithRefresh(d time.Duration) Option { return func(c *config) { c.refresh = d } }

// WithMaxKeyLen bounds how many bytes of a key the view keeps and accepts
// (default 512): the hot-key table tracks a longer key by its first bytes
// (marked truncated), and Inspect refuses longer keys with 400.
func WithMaxKeyLen(n int) Option { return func(c *config) { c.maxKeyLen = n } }

// WithInspect turns on the lookup of who holds an arbitrary key across the
// cluster (?inspect=KEY, core.Client.Inspect). It is off by default: it
// lets a visitor probe any key and read its holder's owner and metadata
// (with otellock, the holder's trace context). When on, lookups are
// bounded (see WithInspectLimits) and keys longer than the max key length
// are refused with 400.
func WithInspect() Option { return func(c *config) { c.inspect = true } }

// WithInspectLimits bounds lookups when Inspect is on: at most concurrency
// at once, and one per interval on average with a burst of concurrency
// (defaults 2 and 200ms); a lookup over either limit gets 429 at once
// instead of queueing.
func WithInspectLimits(concurrency int, interval time.Duration) Option {
	return func(c *config) {
		c.inspectPar = concurrency
		c.inspectPer = interval
	}
}
