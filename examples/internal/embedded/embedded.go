// Package embedded gives the examples a Redis: the one REDIS_URL names, or
// when it is unset an in-process miniredis, so `go -C examples run ./...`
// works on a machine with no Redis at all. It knows nothing of any web
// framework; the gin, echo, gRPC and otel examples and the demo share it.
//
// miniredis does not expire keys by itself (its clock only moves when told
// to), so the embedded server gets a ticker that advances it in real time:
// lock TTLs then run out as they would on a real Redis, which is what a
// crashed holder's lock needs.
package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EnvURL is the environment variable every example reads its Redis URL
// from; -redis (URLFlag) overrides it in the examples with flags, all but
// otel. The listen address is ADDR's (see serve.EnvAddr).
const EnvURL = "REDIS_URL"

// urlSource is where a URL given to Open comes from, for its errors: a
// user must tell the Redis they named from the embedded one.
const urlSource = EnvURL + " or -redis"

// The bounds of every client's I/O, so that a wrong URL (nothing listening,
// a firewall dropping packets, rediss:// at a plaintext port) fails the
// example within seconds instead of hanging it. A URL's own dial_timeout,
// read_timeout or write_timeout, when given, wins.
const (
	dialTimeout = 3 * time.Second // connect and TLS handshake, per attempt
	ioTimeout   = 3 * time.Second // each read or write without a ctx deadline
	pingTimeout = 5 * time.Second // Open's check that the server answers
)

// tick is how often the embedded server's clock is advanced: the TTL
// resolution of the embedded server.
const tick = 50 * time.Millisecond

// Redis is a connected go-redis client and, when embedded, the miniredis
// behind it.
type Redis struct {
	// Client has ContextTimeoutEnabled, as core.New requires, MaxRetries
	// -1 and bounded dial and I/O timeouts (see bounded).
	Client *redis.Client
	// Desc says where the data lives, for the startup line.
	Desc string
	// Embedded is true when no URL was given.
	Embedded bool

	opts func() *redis.Options // fresh options for NewClient
	mr   *miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
}

// Open connects to url ("redis://host:port/db", see redis.ParseURL), or
// starts an embedded miniredis when url is "". The connection is checked
// with a PING bounded by ctx. Its errors say which Redis failed, the one
// the URL names or the embedded one, since "cannot reach" means something
// else for each; and they never show the URL's user or password.
func Open(ctx context.Context, url string) (*Redis, error) {
	if url == "" {
		return openEmbedded()
	}
	if _, err := redis.ParseURL(url); err != nil {
		return nil, fmt.Errorf("%s: %w", urlSource, parseError(url))
	}
	opts := func() *redis.Options {
		opt, _ := redis.ParseURL(url) // checked above
		return bounded(opt)
	}
	r := &Redis{Client: redis.NewClient(opts()), opts: opts}
	addr := r.Client.Options().Addr
	r.Desc = "redis at " + addr
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := r.Client.Ping(pctx).Err(); err != nil {
		_ = r.Client.Close()
		hint := ""
		if r.Client.Options().TLSConfig != nil && isTimeout(err) {
			hint = " (rediss:// speaks TLS: does the server take TLS on that port?)"
		}
		return nil, fmt.Errorf("cannot reach the Redis at %s named by %s%s: %w", addr, urlSource, hint, err)
	}
	return r, nil
}

// bounded sets what every client of the examples has: ContextTimeoutEnabled
// (core.New requires it); MaxRetries -1, the project's choice of no hidden
// re-sends; one dial attempt instead of go-redis's five; dial, read and
// write timeouts of seconds; and a dialer that ends a TLS handshake with its
// context.
func bounded(o *redis.Options) *redis.Options {
	o.ContextTimeoutEnabled = true
	if o.MaxRetries == 0 {
		o.MaxRetries = -1
	}
	o.DialerRetries = 1
	if o.DialTimeout == 0 {
		o.DialTimeout = dialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = ioTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = ioTimeout
	}
	o.Dialer = dialer(o.DialTimeout, o.TLSConfig)
	return o
}

// dialer dials like go-redis's own dialer, but for TLS: go-redis uses
// tls.DialWithDialer, which ignores the context, so a handshake the server
// never answers (redis-server reading a ClientHello as an unfinished
// command) is cut only by DialTimeout, on each dial attempt.
// tls.Dialer.DialContext ends with the context as well, and its
// NetDialer's Timeout bounds the connect and the handshake together.
func dialer(timeout time.Duration, conf *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{
		Timeout:         max(timeout, 0), // < 0: the URL disabled it
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3},
	}
	if conf == nil {
		return nd.DialContext
	}
	td := &tls.Dialer{NetDialer: nd, Config: conf}
	return td.DialContext
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// URLFlag defines -redis on fs and returns what to pass to Open once fs is
// parsed: the flag's value when it was given (even empty, which asks for
// the embedded miniredis), else $REDIS_URL. The flag's default is not the
// environment's value because -h prints defaults, and a URL may carry a
// password.
func URLFlag(fs *flag.FlagSet, getenv func(string) string) func() string {
	v := fs.String("redis", "", "Redis URL, redis://[user:password@]host:port[/db] or rediss://... (default $"+EnvURL+"; empty: an embedded miniredis)")
	return func() string {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "redis" })
		if set {
			return *v
		}
		return getenv(EnvURL)
	}
}

// Redact returns url with its userinfo (user and password) masked, for any
// message that shows a Redis URL. It works on the text, not on a parsed URL,
// so that a URL that does not parse is masked too: everything between "://"
// (or the start, without one) and the last "@" is replaced.
func Redact(url string) string {
	at := strings.LastIndex(url, "@")
	if at < 0 {
		return url
	}
	start := 0
	if i := strings.Index(url, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return url[:start] + "xxxxx" + url[at:]
}

// parseError says why url does not parse without showing its userinfo.
// The parser's own errors quote the URL, or a piece of it (a password with
// a '/' in it is read as host and port): so the error is the one of the
// redacted URL, which has everything but the secret; when that one parses,
// the fault is in the userinfo, and that is all the error says.
func parseError(url string) error {
	red := Redact(url)
	if _, err := redis.ParseURL(red); err != nil {
		return fmt.Errorf("%q is not a Redis URL (redis://[user:password@]host:port[/db], or rediss:// for TLS): %w", red, err)
	}
	return fmt.Errorf("%q: its user or password does not parse (percent-encode characters such as / ? # %% in them)", red)
}

func openEmbedded() (*Redis, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("cannot start the embedded miniredis (%s unset): %w", urlSource, err)
	}
	opts := func() *redis.Options { return bounded(&redis.Options{Addr: mr.Addr()}) }
	r := &Redis{
		Client:   redis.NewClient(opts()),
		opts:     opts,
		Desc:     "embedded miniredis at " + mr.Addr() + " (set " + EnvURL + " to use a real Redis)",
		Embedded: true,
		mr:       mr,
		stop:     make(chan struct{}),
	}
	r.done.Add(1)
	go r.advance()
	return r, nil
}

// NewClient returns another go-redis client of the same server, with its
// own connection pool: what a second replica of a service would have. The
// caller closes it (before Close). Its options are made afresh, not copied
// from Client: go-redis options carry per-client state (push handlers).
func (r *Redis) NewClient() *redis.Client { return redis.NewClient(r.opts()) }

// advance moves miniredis's clock with the real one, so TTLs expire.
func (r *Redis) advance() {
	defer r.done.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Close closes the client and stops the embedded server.
func (r *Redis) Close() error {
	err := r.Client.Close()
	if r.mr != nil {
		close(r.stop)
		r.done.Wait()
		r.mr.Close()
	}
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}
