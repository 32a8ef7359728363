package redistest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKillRestartPauseResume(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(true)
	if v, err := s.Client.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after Restart(keep) = %q %v", v, err)
	}
	s.Restart(false)
	if n, _ := s.Client.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("Restart(empty) kept data")
	}
	s.Pause()
	pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := s.Client.Ping(pctx).Err()
	pcancel()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	s.Resume()
	if err := s.NewClient().Ping(ctx).Err(); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
	s.Kill()
	if s.Running() {
		t.Fatal("still running after Kill")
	}
	if err := s.NewClient().Ping(ctx).Err(); err == nil {
		t.Fatal("a killed server answered")
	}
}

func TestStartNAreIndependent(t *testing.T) {
	srvs := StartN(t, 3)
	ctx := context.Background()
	for i, s := range srvs {
		s.Client.Set(ctx, "who", fmt.Sprint(i), 0)
	}
	for i, s := range srvs {
		if v, _ := s.Client.Get(ctx, "who").Result(); v != fmt.Sprint(i) {
			t.Fatalf("server %d sees %q", i, v)
		}
	}
}

// fatalTB records the message of Fatal and stops like testing does.
type fatalTB struct {
	testing.TB
	msg  string
	temp string
}

func (f *fatalTB) Helper()                   {}
func (f *fatalTB) TempDir() string           { return f.temp }
func (f *fatalTB) Cleanup(func())            {}
func (f *fatalTB) Fatal(args ...any)         { f.msg = fmt.Sprint(args...); runtime.Goexit() }
func (f *fatalTB) Fatalf(s string, a ...any) { f.msg = fmt.Sprintf(s, a...); runtime.Goexit() }

func TestMissingRedisServerSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server here
	f := &fatalTB{temp: t.TempDir()}
	done := make(chan struct{})
	go func() { defer close(done); Start(f) }()
	<-done
	if f.msg != InstallHint || strings.Count(f.msg, "\n") != 0 || !strings.Contains(f.msg, "apt-get install -y redis-server") {
		t.Fatalf("message = %q", f.msg)
	}
}

// A server started under a wrapper command runs in the wrapper's process
// (nice here, as valgrind does): Pid is the server's, and the wrapper's
// arguments took effect.
func TestWrapper(t *testing.T) {
	s := Start(t, WithWrapper("nice", "-n", "7"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.Client.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("process_id:%d\r", s.Pid()); !strings.Contains(info, want) {
		t.Errorf("INFO server lacks %q: Pid is not the server's", want)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command name's closing parenthesis: state is the
	// first, nice the 17th.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 17 || fields[16] != "7" {
		t.Errorf("server's nice value %v, want 7: the wrapper did not run it", fields)
	}
	s.Kill()
	if s.Pid() != 0 {
		t.Errorf("Pid after Kill = %d, want 0", s.Pid())
	}
}
