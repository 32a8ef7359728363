// Package redistest starts and controls real redis-server processes for tests.
//
// Every server is a fresh child process on a free loopback port with its own
// data directory, stopped by t.Cleanup. The helper can kill, restart (same
// port, data kept or not), pause (SIGSTOP) and resume a server, which is what
// the failure tests of the lock engine need. Nothing here talks to a Redis
// someone else started.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallHint is the one line printed when redis-server is missing.
const InstallHint = "redistest: redis-server not found on PATH; install it with `apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis`"

// Server is one redis-server child process owned by a test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string
	// busPort is the cluster bus port when cluster mode is on (0: off),
	// chosen free rather than Redis's default port+10000, which can be
	// taken or out of range for an ephemeral port.
	busPort   int
	clusterOn bool
	// wrapper is a command redis-server runs under (WithWrapper).
	wrapper []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool

	// Client is a go-redis client for this server with ContextTimeoutEnabled
	// and MaxRetries -1 (no hidden re-sends), closed at cleanup.
	Client *redis.Client
}

// Option changes how a server is started.
type Option func(*Server)

// WithArgs appends redis-server command-line arguments, e.g. "--replicaof", "127.0.0.1 6380".
func WithArgs(args ...string) Option { return func(s *Server) { s.args = append(s.args, args...) } }

// WithWrapper runs redis-server under a command given with its arguments,
// e.g. valgrind's callgrind, which counts the instructions the server runs
// (bench's BenchmarkRedisInstructions). Valgrind runs the program in its own
// process, so Pid is the server's.
func WithWrapper(cmd ...string) Option { return func(s *Server) { s.wrapper = cmd } }

// Start starts a fresh redis-server on a free loopback port and returns it.
// The test fails with one clear line when redis-server is not installed.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(InstallHint)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	var lastErr error
	for range 5 { // a free port can be taken between probe and bind: try a few
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: no free port: %v", err)
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
		s.busPort = 0
	}
	if lastErr != nil {
		t.Fatalf("redistest: start redis-server: %v", lastErr)
	}
	s.Client = s.NewClient()
	t.Cleanup(s.stop)
	return s
}

// StartN starts n independent servers (e.g. Redlock masters).
func StartN(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(t, opts...)
	}
	return out
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Pid is the server process's id, 0 when it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Options returns the go-redis options the helper uses: ContextTimeoutEnabled
// (a context deadline bounds socket I/O) and MaxRetries -1.
func (s *Server) Options() *redis.Options {
	return &redis.Options{
		Addr:                  s.Addr(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		DialerRetries:         1, // a killed server fails the call at once, not after 5 dials
	}
}

// NewClient returns a new go-redis client (its own pool, as another process
// would have) that is closed at cleanup.
func (s *Server) NewClient(mod ...func(*redis.Options)) *redis.Client {
	o := s.Options()
	for _, m := range mod {
		m(o)
	}
	c := redis.NewClient(o)
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) start() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--dbfilename", "dump.rdb",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "warning",
		"--protected-mode", "no",
	}, s.args...)
	if s.clusterOn {
		if s.busPort == 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			s.busPort = p
		}
		args = append(args, "--cluster-port", strconv.Itoa(s.busPort))
	}
	ready := 10 * time.Second
	cmd := exec.Command(s.bin, args...)
	if len(s.wrapper) > 0 {
		cmd = exec.Command(s.wrapper[0], slices.Concat(s.wrapper[1:], []string{s.bin}, args)...)
		ready = time.Minute // valgrind starts slowly
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	logf, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", time.Now().UnixNano())))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	if err := waitReady(s.Addr(), exited, ready); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		b, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("%w; log: %s", err, strings.TrimSpace(lastLines(string(b), 5)))
	}
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()
	return nil
}

// waitReady pings until the server answers PONG (not LOADING).
func waitReady(addr string, exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("redis-server exited during start")
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("redis-server did not answer PING in time")
}

// Kill stops the server with SIGKILL (a crash: nothing saved) and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	<-exited
}

// Restart kills the server and starts it again on the same port, with its
// data when keepData is true (saved with SAVE before the kill), empty otherwise.
func (s *Server) Restart(keepData bool) {
	s.t.Helper()
	rdb := filepath.Join(s.dir, "dump.rdb")
	if keepData {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.Client.Save(ctx).Err()
		cancel()
		if err != nil {
			s.t.Fatalf("redistest: SAVE before restart: %v", err)
		}
	}
	s.Kill()
	if !keepData {
		_ = os.Remove(rdb)
	}
	var err error
	for range 50 { // the old socket may linger a moment
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
}

// Pause freezes the server with SIGSTOP: connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, true) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redistest: server on port %d is not running", s.port)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
	s.paused = paused
}

// Running reports whether the server process is up (paused counts as up).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) stop() { s.Kill() }

// logTail is the last n lines of the server's newest log file.
func (s *Server) logTail(n int) string {
	files, _ := filepath.Glob(filepath.Join(s.dir, "redis-*.log"))
	if len(files) == 0 {
		return ""
	}
	b, _ := os.ReadFile(files[len(files)-1])
	return lastLines(string(b), n)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
