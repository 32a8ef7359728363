package faults

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of real redis-server processes, masters only,
// stopped at the end of the test.
type Cluster struct {
	t       testing.TB
	Servers []*redistest.Server
}

// StartCluster starts n (≥ 3) redis-server processes with cluster mode on,
// joins them with `redis-cli --cluster create … --cluster-replicas 0` and
// waits until every node reports cluster_state:ok. It fails the test with one
// line when redis-cli is missing or the cluster does not form in time.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("faults: a Redis Cluster needs at least 3 masters, got %d", n)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("faults: redis-cli not found on PATH; it comes with redis-server (apt-get install -y redis-server / redis-tools)")
	}
	// The cluster bus listens on port+10000; redistest retries another port
	// when that is out of range or taken (the server exits at start).
	srvs := redistest.StartN(t, n, redistest.WithArgs(
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000",
	))
	args := []string{"--cluster", "create"}
	for _, s := range srvs {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("faults: redis-cli --cluster create: %v\n%s", err, out)
	}
	c := &Cluster{t: t, Servers: srvs}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range srvs {
		for {
			info, err := s.Client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("faults: cluster not ok on %s after 30s: %v %s", s.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs are the masters' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr()
	}
	return out
}

// NewClient returns a cluster client over every node with
// ContextTimeoutEnabled and no hidden retries, closed at cleanup.
func (c *Cluster) NewClient() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
	})
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}
