// Package promtest runs a real Prometheus server for tests: the Debian
// package's binary (or $PROMETHEUS) on a free loopback port, with its own
// configuration and its own storage under t.TempDir(), scraping the targets
// a test names every second, killed when the test ends. A dashboard's
// queries are only known to work once a Prometheus has answered them over
// what an exporter really served; this package is that Prometheus.
//
// It never talks to a Prometheus it did not start (the system service of
// the package may listen on :9090).
package promtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Job is the scrape job every target is in (the job label of its series).
const Job = "lockkit"

// ScrapeInterval is how often the targets are scraped.
const ScrapeInterval = time.Second

// ErrNoBinary is reported when no Prometheus binary is found.
var ErrNoBinary = errors.New("promtest: no prometheus binary (install Debian's prometheus package, or set PROMETHEUS)")

// Binary returns the Prometheus binary to run: $PROMETHEUS, prometheus on
// $PATH, or /usr/bin/prometheus.
func Binary() (string, error) {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err == nil {
		return "/usr/bin/prometheus", nil
	}
	return "", ErrNoBinary
}

// Server is one running Prometheus.
type Server struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port>.
	URL string

	client *http.Client
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
}

// Start runs a Prometheus scraping targets (host:port, path /metrics) every
// ScrapeInterval, and waits until it is ready and its targets are active
// (about 5 s: see waitReady). Without a binary the test is skipped, or
// fails when the CI environment variable is set: a CI machine that cannot
// run the dashboard's test must say so. The server is killed
// at cleanup; its log is printed when the test failed.
func Start(t testing.TB, targets ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, config(targets), 0o600); err != nil {
		t.Fatal(err)
	}
	// A free port can be taken by someone else between our probe and
	// Prometheus's bind: then it exits at once and we try another.
	var lastErr error
	for range 3 {
		s, err := start(bin, cfg, dir, len(targets))
		if err == nil {
			t.Cleanup(func() {
				s.stop()
				if t.Failed() {
					t.Logf("prometheus log:\n%s", s.log.String())
				}
			})
			return s
		}
		lastErr = err
	}
	t.Fatal(lastErr)
	return nil
}

// config is the server's prometheus.yml.
func config(targets []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", ScrapeInterval, ScrapeInterval, ScrapeInterval)
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets:\n", Job)
	for _, t := range targets {
		fmt.Fprintf(&b, "          - %q\n", t)
	}
	return b.Bytes()
}

func start(bin, cfg, dir string, targets int) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{
		URL:    "http://" + addr,
		client: &http.Client{Timeout: 5 * time.Second},
		exited: make(chan struct{}),
		log:    &syncBuffer{},
	}
	s.cmd = exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("promtest: start %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(30*time.Second, targets); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w\nprometheus log:\n%s", err, s.log.String())
	}
	return s, nil
}

// waitReady polls until the server is ready (/-/ready answers 200) and
// its n targets are active, the process exits, or limit passes. Prometheus
// hands discovered targets to its scrape manager only every 5 seconds, the
// first time too: until then nothing is scraped, whatever the interval.
// Returning only once they are active lets a caller start what is to be
// scraped knowing the scrapes begin within an interval.
func (s *Server) waitReady(limit time.Duration, n int) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := s.client.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("/-/ready: %s", resp.Status)
			}
		}
		if err == nil {
			var active []Target
			if active, err = s.Targets(); err == nil {
				if len(active) >= n {
					return nil
				}
				err = fmt.Errorf("%d of %d targets active", len(active), n)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("promtest: prometheus at %s not ready within %v (last: %v)", s.URL, limit, err)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("promtest: prometheus exited before it was ready")
		case <-tick.C:
		}
	}
}

func (s *Server) stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// FreePort returns a loopback TCP port nobody listened on a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is the process's log: written by exec's copier, read by the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// ctx bounds one API call.
func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
