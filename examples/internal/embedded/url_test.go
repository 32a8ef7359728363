package embedded_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// Each URL form gives its kind of target, with the addresses, master name
// and database it names; a bad URL gives an error that says what is wrong
// with it.
func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url    string
		kind   embedded.Kind
		addrs  []string
		master string
		db     int
		tls    bool
		err    string // a piece of the error; "" when the URL is good
	}{
		// One server: go-redis's ParseURL, as before.
		{url: "redis://h:1/2", kind: embedded.Standalone, addrs: []string{"h:1"}, db: 2},
		{url: "rediss://u:p@h:1", kind: embedded.Standalone, addrs: []string{"h:1"}, tls: true},
		{url: "unix:///run/redis.sock?db=3", kind: embedded.Standalone, addrs: []string{"/run/redis.sock"}, db: 3},
		{url: "redis://h:1/1?cluster=false", kind: embedded.Standalone, addrs: []string{"h:1"}, db: 1},
		// A cluster: go-redis's ParseClusterURL (addr=), or cluster=true.
		{url: "redis://h:1?addr=h:2&addr=h:3", kind: embedded.Cluster, addrs: []string{"h:1", "h:2", "h:3"}},
		{url: "redis://h:1?cluster=true", kind: embedded.Cluster, addrs: []string{"h:1"}},
		{url: "redis://h:1/0?cluster=1&read_timeout=2s", kind: embedded.Cluster, addrs: []string{"h:1"}},
		{url: "rediss://u:p@h:1?cluster=true&addr=h:2", kind: embedded.Cluster, addrs: []string{"h:1", "h:2"}, tls: true},
		// A Sentinel group: go-redis's ParseFailoverURL (master_name=).
		{url: "redis://s:1?master_name=mymaster", kind: embedded.Sentinel, addrs: []string{"s:1"}, master: "mymaster"},
		{url: "redis://su:sp@s:1/2?master_name=m&addr=s:2&addr=s:3&password=pw", kind: embedded.Sentinel, addrs: []string{"s:1", "s:2", "s:3"}, master: "m", db: 2},
		{url: "redis://s:1?master_name=m&cluster=false", kind: embedded.Sentinel, addrs: []string{"s:1"}, master: "m"},
		{url: "rediss://s:1?master_name=m&db=4", kind: embedded.Sentinel, addrs: []string{"s:1"}, master: "m", db: 4, tls: true},

		{url: "http://h:1", err: `unknown scheme "http"`},
		{url: "//h:1", err: "no scheme"},
		{url: "redis://?cluster=true", err: "no cluster node address"},
		{url: "redis://?addr=h:2&addr=h:3", err: "no cluster node address"},
		{url: "redis://h:1?addr=", err: "empty addr="},
		{url: "redis://h:1?addr=nohost", err: "unable to parse addr param"},
		{url: "redis://h:1?cluster=yes", err: `cluster="yes"`},
		{url: "redis://h:1?cluster=false&addr=h:2", err: "addr= with cluster=false"},
		{url: "redis://h:1/3?cluster=true", err: "database 0 only"},
		{url: "redis://h:1?cluster=true&db=1", err: "unexpected option: db"},
		{url: "unix:///run/redis.sock?cluster=true", err: "not unix://"},
		{url: "redis://?master_name=m", err: "no sentinel address"},
		{url: "redis://s:1?master_name=", err: "master_name= is empty"},
		{url: "redis://s:1?master_name=m&cluster=true", err: "a URL names one deployment"},
		{url: "redis://s:1?master_name=m&route_randomly=true", err: "master only"},
		{url: "redis://s:1?master_name=m&replica_only=true", err: "replica_only"},
		{url: "redis://s:1?master_name=m&nope=1", err: "unexpected option: nope"},
		{url: "redis://h:1?nope=1", err: "unexpected option: nope"},
		{url: "redis:h:1", err: "no // after redis"},
		// A password without its '@' is no address.
		{url: "redis://u:p:6379", err: "not host:port"},
		{url: "redis://h%2Fx:1", err: "invalid URL escape"},
		// The userinfo ends at the last '@' (Redact hides up to there).
		{url: "redis://s:1?master_name=m&password=a@b", err: "an '@' after the host"},
		{url: "redis://u:12#p@h:1", err: "an '@' after the host"},
		{url: "redis://s:1?master_name=m&password=a%40b", kind: embedded.Sentinel, addrs: []string{"s:1"}, master: "m"},
	} {
		got, err := embedded.ParseURL(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseURL(%q) = %+v, %v; want an error with %q", tc.url, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.url, err)
			continue
		}
		if got.Kind != tc.kind || !slices.Equal(got.Addrs, tc.addrs) || got.MasterName != tc.master || got.DB != tc.db || got.TLS != tc.tls {
			t.Errorf("ParseURL(%q) = %v %v %q db %d tls %v; want %v %v %q db %d tls %v", tc.url,
				got.Kind, got.Addrs, got.MasterName, got.DB, got.TLS, tc.kind, tc.addrs, tc.master, tc.db, tc.tls)
		}
	}
}

// Each kind's client is the one core.New takes for it, with the options the
// examples rely on whatever the URL says: ContextTimeoutEnabled (even
// against context_timeout_enabled=false), no re-sends, one dial attempt and
// timeouts of seconds. Making a client does no I/O: nothing listens here.
func TestTargetClients(t *testing.T) {
	bounded := func(ctxTO bool, retries, dialerRetries int, dial, read, write time.Duration) error {
		if !ctxTO || retries != -1 || dialerRetries != 1 || dial <= 0 || dial > 5*time.Second ||
			read <= 0 || read > 5*time.Second || write <= 0 || write > 5*time.Second {
			return fmt.Errorf("ContextTimeoutEnabled %v, MaxRetries %d, DialerRetries %d, timeouts %v %v %v", ctxTO, retries, dialerRetries, dial, read, write)
		}
		return nil
	}
	for _, url := range []string{
		"redis://127.0.0.1:1/0",
		"redis://127.0.0.1:1?cluster=true",
		"redis://127.0.0.1:1?master_name=m&context_timeout_enabled=false",
	} {
		target, err := embedded.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		c := target.NewClient()
		switch c := c.(type) {
		case *redis.ClusterClient:
			o := c.Options()
			if target.Kind != embedded.Cluster {
				t.Errorf("%q: a cluster client for %v", url, target.Kind)
			}
			if err := bounded(o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout); err != nil {
				t.Errorf("%q: %v", url, err)
			}
		case *redis.Client:
			o := c.Options()
			if target.Kind == embedded.Cluster {
				t.Errorf("%q: a %T for a cluster", url, c)
			}
			// (A client's Options are normalised: MaxRetries -1 reads 0.)
			if err := bounded(o.ContextTimeoutEnabled, o.MaxRetries-1, o.DialerRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout); err != nil {
				t.Errorf("%q: %v", url, err)
			}
		default:
			t.Errorf("%q: a %T", url, c)
		}
		if _, err := core.New(c); err != nil {
			t.Errorf("%q: core.New: %v", url, err)
		}
		_ = c.Close()
	}
}

// A Sentinel URL reaches the master the sentinels watch, through any
// sentinel it lists (the first one is dead here, so the one in addr= is
// used), and the engine locks on it; a single-server URL at the sentinel,
// and a master name the sentinels do not know, fail with what is wrong.
func TestOpenSentinel(t *testing.T) {
	master := redistest.Start(t)
	s := redistest.StartSentinel(t, master, "orders")
	dead := redistest.Start(t)
	deadAddr := dead.Addr()
	dead.Kill()
	ctx := testkit.Context(t, 30*time.Second)

	r, err := embedded.Open(ctx, "redis://"+deadAddr+"/0?master_name=orders&addr="+s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Target.Kind != embedded.Sentinel || !strings.Contains(r.Desc, `"orders"`) || !strings.Contains(r.Desc, s.Addr) {
		t.Errorf("kind %v, desc %q", r.Target.Kind, r.Desc)
	}
	a := testkit.Client(t, r.Client)
	b2 := r.NewClient()
	defer b2.Close()
	b := testkit.Client(t, b2)
	l, err := a.Acquire(ctx, "order:7")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := master.Client.Exists(ctx, "lockkit:v1:k:order:7").Result(); err != nil || n != 1 {
		t.Fatalf("the lock is not on the master the sentinel watches: %d %v", n, err)
	}
	if _, err := b.TryAcquire(ctx, "order:7"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another client of the same URL got a held lock: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	for url, want := range map[string]string{
		"redis://" + s.Addr:                          "add master_name=",
		"redis://" + s.Addr + "?master_name=billing": `the master "billing" of the sentinels at ` + s.Addr,
	} {
		r, err := embedded.Open(ctx, url)
		if err == nil {
			r.Close()
			t.Errorf("Open(%q) succeeded", url)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v; want %q in it", url, err, want)
		}
	}
}

// A cluster URL, in either form, reaches a real 3-master cluster with a
// replica each: every master holds locks, and a waiter on another client of
// the same URL is woken by the release (a shard channel) long before the
// holder's TTL. A single-server URL at a node, and a cluster URL at a
// single server, fail with what to change.
func TestOpenCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	ctx := testkit.Context(t, 60*time.Second)
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}

	t.Run("addr list", func(t *testing.T) {
		url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
		r, err := embedded.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, ok := r.Client.(*redis.ClusterClient); !ok || r.Target.Kind != embedded.Cluster || !slices.Equal(r.Target.Addrs, addrs) {
			t.Fatalf("%T %v %v", r.Client, r.Target.Kind, r.Target.Addrs)
		}
		if !strings.Contains(r.Desc, "Redis Cluster") {
			t.Errorf("desc %q", r.Desc)
		}
		a := testkit.Client(t, r.Client)
		rb := r.NewClient()
		defer rb.Close()
		b := testkit.Client(t, rb)

		// One key per master.
		keys := map[*redistest.Server]string{}
		for i := 0; len(keys) < 3 && i < 1000; i++ {
			k := fmt.Sprintf("order:%d", i)
			m := c.Master(c.Slot("lockkit:v1:k:" + k))
			if _, ok := keys[m]; !ok {
				keys[m] = k
			}
		}
		if len(keys) != 3 {
			t.Fatalf("keys on %d masters", len(keys))
		}
		for m, k := range keys {
			l, err := a.Acquire(ctx, k, core.TTL(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if n, err := m.Client.Exists(ctx, "lockkit:v1:k:"+k).Result(); err != nil || n != 1 {
				t.Fatalf("%s is not on its master %s: %d %v", k, m.Addr(), n, err)
			}
			got := make(chan error, 1)
			go func() {
				w, err := b.Acquire(ctx, k, core.Wait(30*time.Second))
				if err == nil {
					err = w.Release(ctx)
				}
				got <- err
			}()
			testkit.WaitFor(t, 10*time.Second, "the waiter on "+k+" to queue", func() bool {
				n, err := m.Client.PubSubShardNumSub(ctx, "lockkit:v1:k:"+k).Result()
				return err == nil && n["lockkit:v1:k:"+k] > 0
			})
			released := time.Now()
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := testkit.Recv(t, got, 20*time.Second, "the waiter on "+k); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(released); took > 10*time.Second {
				t.Errorf("%s: the waiter got the lock %v after the release: not woken by it", k, took)
			}
		}
	})

	t.Run("one node", func(t *testing.T) {
		r, err := embedded.Open(ctx, "redis://"+addrs[len(addrs)-1]+"?cluster=true")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, ok := r.Client.(*redis.ClusterClient); !ok {
			t.Fatalf("%T", r.Client)
		}
		// Every master answers through the one node's client: it learnt
		// the slot map.
		for i := range 30 {
			k := fmt.Sprint("k", i)
			if err := r.Client.Set(ctx, k, i, 0).Err(); err != nil {
				t.Fatalf("SET %s: %v", k, err)
			}
		}
		for _, m := range c.Masters() {
			if n, err := m.Client.DBSize(ctx).Result(); err != nil || n == 0 {
				t.Errorf("master %s has %d keys: %v", m.Addr(), n, err)
			}
		}
	})

	t.Run("wrong client", func(t *testing.T) {
		plain := redistest.Start(t)
		for url, want := range map[string]string{
			"redis://" + addrs[0] + "/0":                "add cluster=true",
			"redis://" + plain.Addr() + "?cluster=true": "a single server takes redis://host:port/db",
		} {
			r, err := embedded.Open(ctx, url)
			if err == nil {
				r.Close()
				t.Errorf("Open(%q) succeeded", url)
				continue
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%q): %v; want %q in it", url, err, want)
			}
		}
	})
}
