package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel is one redis-sentinel process (redis-server --sentinel) watching
// a master under a name, stopped at cleanup.
type Sentinel struct {
	Addr string
	Name string
}

// StartSentinel starts a sentinel watching master as name (quorum 1, fast
// failure detection) and waits until it knows the master.
func StartSentinel(t testing.TB, master *Server, name string) *Sentinel {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(InstallHint)
	}
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
		port, dir, name, master.Port(), name, name)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	logf, err := os.Create(filepath.Join(dir, "sentinel.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	s := &Sentinel{Addr: "127.0.0.1:" + strconv.Itoa(port), Name: name}
	if err := waitReady(s.Addr, exited, 10*time.Second); err != nil {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("redistest: sentinel: %v: %s", err, lastLines(string(b), 5))
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := sc.GetMasterAddrByName(ctx, name).Result()
		cancel()
		if err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(master.Port()) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: sentinel does not know master %s: %v %v", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FailoverClient returns a go-redis sentinel failover client for the
// sentinel's master (ContextTimeoutEnabled, MaxRetries -1), closed at cleanup.
func (s *Sentinel) FailoverClient(t testing.TB) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            s.Name,
		SentinelAddrs:         []string{s.Addr},
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
