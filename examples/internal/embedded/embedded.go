// Package embedded gives the examples a Redis: the one REDIS_URL names, or
// when it is unset an in-process miniredis, so `go run ./examples/...`
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
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EnvURL is the environment variable the examples read the Redis URL from.
const EnvURL = "REDIS_URL"

// urlSource is where a URL given to Open comes from, for its errors: a
// user must tell the Redis they named from the embedded one.
const urlSource = EnvURL + " or -redis"

// tick is how often the embedded server's clock is advanced: the TTL
// resolution of the embedded server.
const tick = 50 * time.Millisecond

// Redis is a connected go-redis client and, when embedded, the miniredis
// behind it.
type Redis struct {
	// Client has ContextTimeoutEnabled, as core.New requires.
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
		opt.ContextTimeoutEnabled = true
		return opt
	}
	r := &Redis{Client: redis.NewClient(opts()), opts: opts}
	addr := r.Client.Options().Addr
	r.Desc = "redis at " + addr
	if err := r.Client.Ping(ctx).Err(); err != nil {
		_ = r.Client.Close()
		return nil, fmt.Errorf("cannot reach the Redis at %s named by %s: %w", addr, urlSource, err)
	}
	return r, nil
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
	opts := func() *redis.Options { return &redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true} }
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
