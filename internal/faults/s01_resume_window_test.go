package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// resumeLook is what the child saw at its first look after SIGCONT.
type resumeLook struct {
	Ev          string `json:"ev"`
	Until       int64  `json:"until,omitempty"`
	UntilPassed bool   `json:"untilPassed,omitempty"`
	CtxErr      string `json:"ctxErr,omitempty"`
	LeaseErr    string `json:"leaseErr,omitempty"`
}

// A process frozen past its deadline must find its lease lost when it runs
// again (the renewal promise: a lease past its local deadline is lost,
// whoever looks first): at its first look, Until is past, and Err and Context().Err()
// must say so too. The child's "go" is already in its stdin when it is
// continued, so its first look races the engine's deadline timer, as any
// goroutine of a real process resumed after a GC pause or SIGSTOP would.
func TestS01ResumedHolderSeesLossAtFirstLook(t *testing.T) {
	const rounds = 8
	srv := redistest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=resume-look", "LOCK_ADDR="+srv.Addr(), "GOMAXPROCS=1",
		fmt.Sprint("ROUNDS=", rounds))
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	next := func() resumeLook {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("child ended: %v", sc.Err())
		}
		var m resumeLook
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		return m
	}
	for r := range rounds {
		ready := next()
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if wait := time.Until(time.Unix(0, ready.Until).Add(200 * time.Millisecond)); wait > 0 {
			time.Sleep(wait) // frozen past the deadline: the fault's duration
		}
		if _, err := fmt.Fprintln(stdin, "go"); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		look := next()
		if !look.UntilPassed {
			t.Fatalf("round %d: Until not past at resume", r)
		}
		if look.CtxErr == "" || look.LeaseErr == "" {
			t.Errorf("round %d: Until is past, but at the first look Err() = %q and Context().Err() = %q", r, look.LeaseErr, look.CtxErr)
		}
	}
}

// resumeLookChild is the child of TestS01ResumedHolderSeesLossAtFirstLook.
func resumeLookChild() error {
	var rounds int
	_, _ = fmt.Sscan(os.Getenv("ROUNDS"), &rounds)
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LOCK_ADDR"), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rdb.Close()
	c, err := core.New(rdb, core.WithTTL(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewReader(os.Stdin)
	for r := range rounds {
		l, err := c.Acquire(ctx, fmt.Sprint("s01:look:", r))
		if err != nil {
			return err
		}
		if err := out.Encode(resumeLook{Ev: "ready", Until: l.Until().UnixNano()}); err != nil {
			return err
		}
		if _, err := in.ReadString('\n'); err != nil { // frozen here
			return err
		}
		look := resumeLook{Ev: "look", UntilPassed: !time.Now().Before(l.Until())}
		if err := l.Context().Err(); err != nil {
			look.CtxErr = err.Error()
		}
		if err := l.Err(); err != nil {
			look.LeaseErr = err.Error()
		}
		if err := out.Encode(look); err != nil {
			return err
		}
		_ = l.Release(ctx)
	}
	return nil
}
