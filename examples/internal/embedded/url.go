package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is the deployment a Redis URL names, which decides the go-redis
// client: the engine takes all three, and on a cluster client it announces
// releases on shard channels.
type Kind int

const (
	// Standalone is one Redis server (a primary, with or without
	// replicas): a *redis.Client.
	Standalone Kind = iota
	// Cluster is a Redis Cluster: a *redis.ClusterClient, which learns the
	// slot map from the nodes the URL names.
	Cluster
	// Sentinel is the master a group of sentinels watches: go-redis's
	// failover *redis.Client, which asks the sentinels for the master and
	// follows a failover.
	Sentinel
)

func (k Kind) String() string {
	switch k {
	case Cluster:
		return "cluster"
	case Sentinel:
		return "sentinel"
	}
	return "standalone"
}

// Target is a parsed Redis URL: what it names, and a way to make any number
// of clients of it. The URL forms are go-redis's own, so that a URL that
// works with go-redis works here and the other way round:
//
//	redis://[user:password@]host:port[/db]           one server (redis.ParseURL);
//	rediss://...                                     TLS; unix://[user:password@]/path?db=N a socket
//	redis://[user:password@]host:port?addr=host:port[&addr=...]
//	                                                 a Redis Cluster (redis.ParseClusterURL)
//	redis://host:port?cluster=true                   a cluster reached through one node
//	redis://[suser:spassword@]host:port[/db]?master_name=NAME[&addr=host:port...]
//	                                                 the master NAME watched by the sentinels
//	                                                 at host:port and each addr (redis.ParseFailoverURL)
//
// The kind is chosen as go-redis's NewUniversalClient chooses its client: a
// master name means Sentinel; more than one address means a cluster. The
// one parameter go-redis lacks is cluster=true, since a cluster whose
// clients are given one node (a load balancer's name, or the single node a
// service starts with) must be told apart from a single server. In a
// Sentinel URL, as in go-redis, the userinfo is the sentinels' credentials
// and the master's are the username= and password= parameters (Redact masks
// both).
//
// Cluster and Sentinel URLs must name their hosts: go-redis's default of
// localhost:6379 suits a developer's single Redis, not a group of servers.
type Target struct {
	Kind Kind
	// Addrs is the server (Standalone), the nodes the cluster client starts
	// from (Cluster), or the sentinels (Sentinel).
	Addrs []string
	// MasterName is the master the sentinels watch (Sentinel only).
	MasterName string
	// DB is the database (a cluster has only 0).
	DB int
	// TLS is true for rediss://.
	TLS bool

	url string // parsed again for each client: go-redis options carry per-client state
}

// String names the target by its kind and addresses, never its URL: a
// Target printed in a message or a log (with %v, %+v or %#v) shows no
// credential.
func (t Target) String() string { return t.where() }

// GoString is String, for %#v.
func (t Target) GoString() string { return t.where() }

// ParseURL parses a Redis URL of any of the forms Target lists. Its errors
// may quote the URL: show them only for a URL Redact has masked (Open does).
func ParseURL(raw string) (*Target, error) {
	p, err := parse(raw)
	if err != nil {
		return nil, err
	}
	t := &Target{url: raw}
	switch {
	case p.cluster != nil:
		t.Kind, t.Addrs, t.TLS = Cluster, p.cluster.Addrs, p.cluster.TLSConfig != nil
	case p.failover != nil:
		t.Kind, t.Addrs, t.TLS = Sentinel, p.failover.SentinelAddrs, p.failover.TLSConfig != nil
		t.MasterName, t.DB = p.failover.MasterName, p.failover.DB
	default:
		t.Addrs, t.DB, t.TLS = []string{p.single.Addr}, p.single.DB, p.single.TLSConfig != nil
	}
	return t, nil
}

// NewClient returns a new client of the target, with its own connection
// pool, bounded as every client of the examples is (see bound): a
// *redis.Client for Standalone and Sentinel, a *redis.ClusterClient for
// Cluster.
func (t *Target) NewClient() redis.UniversalClient {
	p, err := parse(t.url)
	if err != nil { // ParseURL parsed it
		panic("embedded: a parsed URL no longer parses: " + err.Error())
	}
	switch {
	case p.cluster != nil:
		o := p.cluster
		bound(limits{&o.ContextTimeoutEnabled, &o.MaxRetries, &o.DialerRetries, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.Dialer, o.TLSConfig})
		return redis.NewClusterClient(o)
	case p.failover != nil:
		o := p.failover
		bound(limits{&o.ContextTimeoutEnabled, &o.MaxRetries, &o.DialerRetries, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.Dialer, o.TLSConfig})
		return redis.NewFailoverClient(o)
	}
	return redis.NewClient(bounded(p.single))
}

// where names the target in an error or the startup line.
func (t Target) where() string {
	addrs := strings.Join(t.Addrs, ", ")
	switch t.Kind {
	case Cluster:
		return "the Redis Cluster at " + addrs
	case Sentinel:
		return fmt.Sprintf("the master %q of the sentinels at %s", t.MasterName, addrs)
	}
	return "the Redis at " + addrs
}

// parsed holds the go-redis options of one URL: exactly one is set.
type parsed struct {
	single   *redis.Options
	cluster  *redis.ClusterOptions
	failover *redis.FailoverOptions
}

// parse tells the kind of a URL from its parameters and hands it to the
// go-redis parser of that kind, after the checks go-redis leaves out: a
// host to start from, a master name that is not empty, no database on a
// cluster, and no failover option that would make go-redis panic or send
// the locks to a replica.
func parse(raw string) (parsed, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return parsed{}, err
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	case "":
		return parsed{}, errors.New("no scheme: a Redis URL starts with redis://, rediss:// or unix://")
	default:
		return parsed{}, fmt.Errorf("unknown scheme %q: a Redis URL starts with redis://, rediss:// or unix://", u.Scheme)
	}
	if u.Opaque != "" {
		return parsed{}, fmt.Errorf("no // after %s: a Redis URL starts with redis://, rediss:// or unix://", u.Scheme)
	}
	// The userinfo ends at the last '@', where Redact looks for it: an '@'
	// after it (a password's '#' or '/' not encoded makes the parser read
	// part of the password as the host, the rest as a fragment or path)
	// would leave the parser's host, which errors show, holding a secret.
	if at := strings.LastIndexByte(raw, '@'); at >= 0 && at != userinfoEnd(raw) {
		return parsed{}, errUserinfoEnd
	}
	// A host go-redis would dial, and show in its errors, may be a
	// password written without its '@'.
	if !plainAddress(u.Host) {
		return parsed{}, errAddress
	}
	q := u.Query()
	_, sentinel := q["master_name"]
	isCluster, hasCluster := false, q.Has("cluster")
	if hasCluster {
		switch v := q.Get("cluster"); v {
		case "true", "1":
			isCluster = true
		case "false", "0":
		default:
			return parsed{}, fmt.Errorf("cluster=%q: want true or false", v)
		}
		q.Del("cluster") // not go-redis's: its parsers get the URL without it
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	for _, a := range q["addr"] {
		if a == "" {
			return parsed{}, errors.New("an empty addr= parameter: each names one more node as host:port")
		}
	}
	more := len(q["addr"]) > 0
	switch {
	case sentinel && isCluster:
		return parsed{}, errors.New("both master_name= (Sentinel) and cluster=true: a URL names one deployment")
	case sentinel:
		if q.Get("master_name") == "" {
			return parsed{}, errors.New("master_name= is empty: name the master the sentinels watch (its name in SENTINEL MONITOR)")
		}
		if u.Scheme == "unix" {
			return parsed{}, errors.New("a Sentinel URL names sentinels by host:port: redis:// or rediss://, not unix://")
		}
		if u.Host == "" {
			return parsed{}, errors.New("no sentinel address: redis://host:port?master_name=NAME[&addr=host:port...]")
		}
		o, err := redis.ParseFailoverURL(raw)
		if err != nil {
			return parsed{}, err
		}
		switch {
		case o.RouteByLatency || o.RouteRandomly:
			return parsed{}, errors.New("route_by_latency and route_randomly send reads to replicas (go-redis's failover cluster client): locks are read and written on the master only")
		case o.ReplicaOnly:
			return parsed{}, errors.New("replica_only: locks are written, on the master")
		}
		return parsed{failover: o}, nil
	case isCluster || more && !hasCluster:
		if u.Scheme == "unix" {
			return parsed{}, errors.New("a cluster URL names nodes by host:port: redis:// or rediss://, not unix://")
		}
		if u.Host == "" {
			return parsed{}, errors.New("no cluster node address: redis://host:port?cluster=true or redis://host:port?addr=host:port[&addr=...]")
		}
		if strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "0" {
			return parsed{}, fmt.Errorf("database %q: a Redis Cluster has database 0 only", strings.Trim(u.Path, "/"))
		}
		u.Path, u.RawPath = "", "" // ParseClusterURL ignores it: 0 or nothing, checked above
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return parsed{}, err
		}
		return parsed{cluster: o}, nil
	case more:
		return parsed{}, errors.New("addr= with cluster=false: more addresses are a cluster's nodes (cluster=true) or sentinels (master_name=)")
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return parsed{}, err
	}
	return parsed{single: o}, nil
}

// limits points at the fields bound sets, which go-redis's three option
// types each have under the same names.
type limits struct {
	contextTimeout                         *bool
	maxRetries, dialerRetries              *int
	dialTimeout, readTimeout, writeTimeout *time.Duration
	dialer                                 *func(ctx context.Context, network, addr string) (net.Conn, error)
	tls                                    *tls.Config
}

// bound sets what every client of the examples has: ContextTimeoutEnabled
// (core.New requires it, and a URL's context_timeout_enabled=false does not
// undo it); MaxRetries -1, the project's choice of no hidden re-sends; one
// dial attempt instead of go-redis's five; dial, read and write timeouts of
// seconds; and a dialer that ends a TLS handshake with its context. A
// URL's own max_retries, dialer_retries or timeouts, when given, win.
func bound(l limits) {
	*l.contextTimeout = true
	if *l.maxRetries == 0 {
		*l.maxRetries = -1
	}
	if *l.dialerRetries == 0 {
		*l.dialerRetries = 1
	}
	if *l.dialTimeout == 0 {
		*l.dialTimeout = dialTimeout
	}
	if *l.readTimeout == 0 {
		*l.readTimeout = ioTimeout
	}
	if *l.writeTimeout == 0 {
		*l.writeTimeout = ioTimeout
	}
	*l.dialer = dialer(*l.dialTimeout, l.tls)
}

// bounded is bound for a single server's options.
func bounded(o *redis.Options) *redis.Options {
	bound(limits{&o.ContextTimeoutEnabled, &o.MaxRetries, &o.DialerRetries, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.Dialer, o.TLSConfig})
	return o
}
