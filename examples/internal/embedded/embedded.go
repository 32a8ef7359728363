// Package embedded gives the examples a Redis: the one REDIS_URL names, or
// when it is unset an in-process miniredis, so `go -C examples run ./...`
// works on a machine with no Redis at all. It knows nothing of any web
// framework; the gin, echo, gRPC and otel examples and the demo share it.
//
// REDIS_URL may name one server, a Redis Cluster or a Sentinel group, in
// go-redis's URL forms (see Target): a service that outgrows one Redis
// keeps its binary and changes its URL. ParseURL is the one place a URL
// becomes a client.
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
	// Client is a *redis.Client (one server, or the master of a Sentinel
	// group) or a *redis.ClusterClient, as the URL's Target.Kind says; it
	// has ContextTimeoutEnabled, as core.New requires, MaxRetries -1 and
	// bounded dial and I/O timeouts (see bound).
	Client redis.UniversalClient
	// Target is what the URL names (for the embedded server, a Standalone
	// target at its address).
	Target *Target
	// Desc says where the data lives, for the startup line.
	Desc string
	// Embedded is true when no URL was given.
	Embedded bool

	mr   *miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
}

// Open connects to url, in any of the forms Target lists (one server, a
// Redis Cluster, a Sentinel group), or starts an embedded miniredis when url
// is "". The connection is checked with a PING bounded by ctx, and a
// single-server URL that names a sentinel or a cluster node is refused with
// what to add to it. Its errors say which Redis failed, the one the URL
// names or the embedded one, since "cannot reach" means something else for
// each; and they never show the URL's user or password.
func Open(ctx context.Context, url string) (*Redis, error) {
	if url == "" {
		return openEmbedded()
	}
	t, err := ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", urlSource, parseError(url))
	}
	r := &Redis{Client: t.NewClient(), Target: t}
	r.Desc = desc(t)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err = r.Client.Ping(pctx).Err()
	if err == nil && t.Kind == Standalone {
		err = notPlain(pctx, r.Client)
	}
	if err != nil {
		_ = r.Client.Close()
		hint := ""
		switch {
		case t.TLS && isTimeout(err):
			hint = " (rediss:// speaks TLS: does the server take TLS on that port?)"
		case t.Kind == Cluster && strings.Contains(err.Error(), "cluster support disabled"):
			hint = " (cluster=true and addr= are for a Redis Cluster; a single server takes redis://host:port/db)"
		}
		return nil, fmt.Errorf("cannot reach %s named by %s%s: %w", t.where(), urlSource, hint, err)
	}
	return r, nil
}

// desc is the startup line's "locks on ..." for a target.
// A startup line names the first two addresses of a longer list: the rest
// add nothing to "where are my locks".
func desc(t *Target) string {
	addrs := strings.Join(t.Addrs, ", ")
	if n := len(t.Addrs); n > 2 {
		addrs = fmt.Sprintf("%s, %s and %d more", t.Addrs[0], t.Addrs[1], n-2)
	}
	switch t.Kind {
	case Cluster:
		return "Redis Cluster through " + addrs + " (releases announced on shard channels)"
	case Sentinel:
		return fmt.Sprintf("redis master %q through the sentinels at %s", t.MasterName, addrs)
	}
	return "redis at " + addrs
}

// notPlain refuses a server that answers PING but is not a plain Redis: a
// sentinel takes no lock commands, and a cluster node, given as a single
// server, would answer MOVED for the locks in other nodes' slots. Both are
// what a URL written for the wrong client looks like, so the error says
// what to add. A server that does not answer INFO (an ACL user without it)
// is taken as it is.
func notPlain(ctx context.Context, c redis.UniversalClient) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nil
	}
	switch {
	case strings.Contains(info, "redis_mode:sentinel"):
		return errors.New("the server is a sentinel, not a Redis: add master_name=<the master's name> to reach the master it watches")
	case strings.Contains(info, "redis_mode:cluster"):
		return errors.New("the server is a Redis Cluster node: add cluster=true (or addr= for more nodes) so that each lock goes to the node that serves its slot")
	}
	return nil
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
	v := fs.String("redis", "", "Redis URL: redis://[user:password@]host:port[/db] (rediss:// for TLS); a cluster: redis://host:port?cluster=true[&addr=host:port...]; a Sentinel group: redis://host:port?master_name=NAME[&addr=host:port...] (default $"+EnvURL+"; empty: an embedded miniredis)")
	return func() string {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "redis" })
		if set {
			return *v
		}
		return getenv(EnvURL)
	}
}

func openEmbedded() (*Redis, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("cannot start the embedded miniredis (%s unset): %w", urlSource, err)
	}
	t := &Target{Kind: Standalone, Addrs: []string{mr.Addr()}, url: "redis://" + mr.Addr()}
	r := &Redis{
		Client:   t.NewClient(),
		Target:   t,
		Desc:     "embedded miniredis at " + mr.Addr() + " (set " + EnvURL + " to use a real Redis)",
		Embedded: true,
		mr:       mr,
		stop:     make(chan struct{}),
	}
	r.done.Add(1)
	go r.advance()
	return r, nil
}

// NewClient returns another go-redis client of the same Redis (of the same
// kind as Client), with its own connection pool: what a second replica of a
// service would have. The caller closes it (before Close). Its options are
// made afresh, not copied from Client: go-redis options carry per-client
// state (push handlers).
func (r *Redis) NewClient() redis.UniversalClient { return r.Target.NewClient() }

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
