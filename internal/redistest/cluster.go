package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server child processes, created with
// redis-cli --cluster create and stopped at cleanup.
type Cluster struct {
	t testing.TB
	// Nodes are every server, in creation order: the first masters of them
	// were created as masters, the rest as their replicas. Roles change
	// with failovers; ask Master, ReplicaOf or Role for the current ones.
	Nodes []*Server
	// Client is a ClusterClient on every node (ContextTimeoutEnabled,
	// MaxRetries -1), closed at cleanup.
	Client *redis.ClusterClient
}

// clusterLimit bounds every wait of the cluster helpers: loose, since a
// loaded 2-core machine can take seconds to elect or sync.
const clusterLimit = 30 * time.Second

// StartCluster starts masters × (1 + replicasPerMaster) servers with
// cluster mode on, creates the cluster with redis-cli (the slots evenly
// over the masters, replicasPerMaster replicas each), and returns once every
// node reports cluster_state:ok with the same slot map and every replica is
// in sync. cluster-node-timeout is 2s: a killed master fails over in a few
// seconds, while a scheduling stall on a loaded machine stays well short of
// it (a shorter timeout invites failovers nobody asked for). opts apply to
// every server (WithArgs "--cluster-node-timeout", "1000" overrides).
func StartCluster(t testing.TB, masters, replicasPerMaster int, opts ...Option) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redistest: redis-cli not found on PATH (it comes with redis-server)")
	}
	n := masters * (1 + replicasPerMaster)
	base := []Option{func(s *Server) { s.clusterOn = true }, WithArgs(
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000",
		"--cluster-replica-validity-factor", "0", // a replica may always take over
		"--cluster-allow-replica-migration", "no", // replicas stay where the test put them
		"--repl-diskless-sync", "yes",
		"--repl-diskless-sync-delay", "0",
		"--loglevel", "notice", // elections and slot changes, for a failure's message
	)}
	c := &Cluster{t: t}
	for range n {
		c.Nodes = append(c.Nodes, Start(t, append(base, opts...)...))
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterLimit)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v: %s", err, lastLines(string(out), 8))
	}
	c.WaitHealthy()
	c.Client = redis.NewClusterClient(c.Options())
	t.Cleanup(func() { _ = c.Client.Close() })
	return c
}

// Options returns the go-redis cluster options the helper uses:
// ContextTimeoutEnabled and MaxRetries -1, as Server.Options.
func (c *Cluster) Options() *redis.ClusterOptions {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return &redis.ClusterOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		DialerRetries:         1,
	}
}

// NewClient returns a new ClusterClient (its own pools, as another process
// would have), closed at cleanup.
func (c *Cluster) NewClient(mod ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := c.Options()
	for _, m := range mod {
		m(o)
	}
	rdb := redis.NewClusterClient(o)
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Running lists the nodes whose process is up.
func (c *Cluster) Running() []*Server {
	var out []*Server
	for _, s := range c.Nodes {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

func (c *Cluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// ID is the node's cluster node id.
func (c *Cluster) ID(s *Server) string {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	id, err := s.Client.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER MYID on %s: %v", s.Addr(), err)
	}
	return id
}

// Role is "master" or "slave", as the node itself reports it.
func (c *Cluster) Role(s *Server) string {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	v, err := s.Client.Do(ctx, "role").Slice()
	if err != nil || len(v) == 0 {
		c.t.Fatalf("redistest: ROLE on %s: %v", s.Addr(), err)
	}
	return fmt.Sprint(v[0])
}

// Masters lists the running nodes that are masters with slots.
func (c *Cluster) Masters() []*Server {
	c.t.Helper()
	var out []*Server
	for _, s := range c.Running() {
		if c.Role(s) == "master" && len(c.slotsOf(s)) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// Master is the running node serving slot as master, by the slot map of a
// running node.
func (c *Cluster) Master(slot int) *Server {
	c.t.Helper()
	m := c.slotMap(c.Running()[0])
	for _, r := range m {
		if slot >= r.from && slot <= r.to {
			return c.byPort(r.port)
		}
	}
	c.t.Fatalf("redistest: slot %d has no master", slot)
	return nil
}

// Slot is the hash slot of key (CLUSTER KEYSLOT).
func (c *Cluster) Slot(key string) int {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	n, err := c.Running()[0].Client.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER KEYSLOT: %v", err)
	}
	return int(n)
}

// ReplicaOf lists the running replicas of master.
func (c *Cluster) ReplicaOf(master *Server) []*Server {
	c.t.Helper()
	var out []*Server
	for _, s := range c.Running() {
		if s == master {
			continue
		}
		ctx, cancel := c.ctx()
		v, err := s.Client.Do(ctx, "role").Slice()
		cancel()
		if err == nil && len(v) >= 3 && v[0] == "slave" && fmt.Sprint(v[2]) == strconv.Itoa(master.Port()) {
			out = append(out, s)
		}
	}
	return out
}

// Failover runs CLUSTER FAILOVER on replica (a manual failover: its master
// pauses writers, the replica catches up and takes over) and waits until
// every node agrees on the new slot map.
func (c *Cluster) Failover(replica *Server) {
	c.t.Helper()
	c.WaitHealthy()
	var asked time.Time
	c.waitFor("the replica to become master", func() bool {
		if c.Role(replica) == "master" {
			return true
		}
		// A manual failover gives up after 5s (a master that missed the
		// request on a loaded machine); ask again after that.
		if time.Since(asked) > 6*time.Second {
			asked = time.Now()
			ctx, cancel := c.ctx()
			err := replica.Client.Do(ctx, "cluster", "failover").Err()
			cancel()
			if err != nil {
				c.t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
			}
		}
		return false
	})
	c.WaitHealthy()
}

// MoveSlot migrates slot, with its keys, from its master to the master to,
// the way redis-cli reshards: IMPORTING on the target, MIGRATING on the
// source, MIGRATE of every key, then SETSLOT NODE on both and every other
// master. It returns once every node agrees.
func (c *Cluster) MoveSlot(slot int, to *Server) {
	c.t.Helper()
	from := c.Master(slot)
	if from == to {
		return
	}
	fromID, toID := c.ID(from), c.ID(to)
	do := func(s *Server, args ...any) {
		c.t.Helper()
		ctx, cancel := c.ctx()
		defer cancel()
		if err := s.Client.Do(ctx, args...).Err(); err != nil {
			c.t.Fatalf("redistest: %v on %s: %v", args, s.Addr(), err)
		}
	}
	do(to, "cluster", "setslot", slot, "importing", fromID)
	do(from, "cluster", "setslot", slot, "migrating", toID)
	for {
		ctx, cancel := c.ctx()
		keys, err := from.Client.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		cancel()
		if err != nil {
			c.t.Fatalf("redistest: GETKEYSINSLOT: %v", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", "127.0.0.1", to.Port(), "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		do(from, args...)
	}
	do(to, "cluster", "setslot", slot, "node", toID)
	do(from, "cluster", "setslot", slot, "node", toID)
	for _, m := range c.Masters() {
		if m != to && m != from {
			do(m, "cluster", "setslot", slot, "node", toID)
		}
	}
	c.WaitHealthy()
}

// WaitHealthy waits until every running node reports cluster_state:ok and
// the same slot map covering all slots, and every running replica's link
// to its master is up.
func (c *Cluster) WaitHealthy() {
	c.t.Helper()
	var why string
	c.waitFor("a healthy cluster", func() bool {
		why = c.unhealthy()
		return why == ""
	})
}

func (c *Cluster) unhealthy() string {
	var first []slotRange
	var view string
	for i, s := range c.Running() {
		v, err := c.nodesView(s)
		if err != nil {
			return err.Error()
		}
		if i == 0 {
			view = v
		} else if v != view {
			return fmt.Sprintf("%s: CLUSTER NODES differs", s.Addr())
		}
		ctx, cancel := c.ctx()
		info, err := s.Client.ClusterInfo(ctx).Result()
		cancel()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return fmt.Sprintf("%s: not ok (%v)", s.Addr(), err)
		}
		m := c.slotMap(s)
		covered := 0
		for _, r := range m {
			covered += r.to - r.from + 1
		}
		if covered != 16384 {
			return fmt.Sprintf("%s: %d slots covered", s.Addr(), covered)
		}
		if i == 0 {
			first = m
		} else if !slices.Equal(first, m) {
			return fmt.Sprintf("%s: slot map differs", s.Addr())
		}
		ctx, cancel = c.ctx()
		repl, err := s.Client.Info(ctx, "replication").Result()
		cancel()
		if err != nil {
			return err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Sprintf("%s: replica not in sync", s.Addr())
		}
	}
	return ""
}

// nodesView is CLUSTER NODES as s sees it, reduced to what every node must
// agree on (id, role, master, slots), one sorted line per node; an error
// while a running node is not connected or still being handshaken, so a
// master knows its replicas (a manual failover needs that) before the
// cluster counts as healthy.
func (c *Cluster) nodesView(s *Server) (string, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	out, err := s.Client.ClusterNodes(ctx).Result()
	if err != nil {
		return "", err
	}
	running := map[string]bool{}
	for _, r := range c.Running() {
		running[r.Addr()] = true
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			return "", fmt.Errorf("%s: odd CLUSTER NODES line %q", s.Addr(), l)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := strings.ReplaceAll(f[2], "myself,", "")
		if running[addr] && (f[7] != "connected" || strings.Contains(flags, "fail") || strings.Contains(flags, "handshake")) {
			return "", fmt.Errorf("%s sees %s as %s %s", s.Addr(), addr, flags, f[7])
		}
		if !running[addr] {
			flags = "down"
		}
		lines = append(lines, strings.Join(append([]string{f[0], addr, flags, f[3]}, f[8:]...), " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

type slotRange struct{ from, to, port int }

// slotMap is CLUSTER SLOTS as seen by s, sorted: which master port serves
// each range.
func (c *Cluster) slotMap(s *Server) []slotRange {
	ctx, cancel := c.ctx()
	defer cancel()
	slots, err := s.Client.ClusterSlots(ctx).Result()
	if err != nil {
		return nil
	}
	out := make([]slotRange, 0, len(slots))
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		_, port, _ := strings.Cut(r.Nodes[0].Addr, ":")
		p, _ := strconv.Atoi(port)
		out = append(out, slotRange{int(r.Start), int(r.End), p})
	}
	slices.SortFunc(out, func(a, b slotRange) int { return a.from - b.from })
	return out
}

func (c *Cluster) slotsOf(s *Server) []slotRange {
	var out []slotRange
	for _, r := range c.slotMap(s) {
		if r.port == s.Port() {
			out = append(out, r)
		}
	}
	return out
}

func (c *Cluster) byPort(port int) *Server {
	for _, s := range c.Nodes {
		if s.Port() == port {
			return s
		}
	}
	c.t.Fatalf("redistest: no node on port %d", port)
	return nil
}

func (c *Cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(clusterLimit)
	for !cond() {
		if time.Now().After(deadline) {
			var logs []string
			for _, s := range c.Nodes {
				logs = append(logs, fmt.Sprintf("%s: %s", s.Addr(), s.logTail(6)))
			}
			c.t.Fatalf("redistest: timed out after %v waiting for %s; node logs:\n%s", clusterLimit, what, strings.Join(logs, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
