package faults_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary run a child role instead of the tests:
// the cross-process scenarios re-execute it.
const childEnv = "LOCKKIT_FAULTS_CHILD"

func childMain() int {
	var err error
	switch role := os.Getenv(childEnv); role {
	case "holder":
		err = holderChild()
	case "resume-look":
		err = resumeLookChild()
	case "rmw-holder":
		err = rmwHolderChild()
	case "claim-holder":
		err = claimHolderChild()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// child is the test binary run again in a child role (childMain), talking
// JSON lines (childMsg) on its stdin and stdout.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	enc    *json.Encoder
	lines  chan childMsg
	exited chan error
}

func startChild(t *testing.T, role string, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, enc: json.NewEncoder(stdin), lines: make(chan childMsg, 16), exited: make(chan error, 1)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m childMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
		c.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		for range c.lines { // drain until the reader ends
		}
	})
	return c
}

func (c *child) send(m childMsg) {
	c.t.Helper()
	if err := c.enc.Encode(m); err != nil {
		c.t.Fatalf("write to child: %v", err)
	}
}

// next returns the child's next message, which must be a want.
func (c *child) next(want string) childMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child ended before %q: %v", want, <-c.exited)
		}
		if m.Ev != want {
			c.t.Fatalf("child said %+v, want %q", m, want)
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatalf("child said nothing for 30s, want %q", want)
	}
	panic("unreachable")
}

func (c *child) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
}

// wait waits for the child to exit, successfully.
func (c *child) wait() {
	c.t.Helper()
	for range c.lines {
	}
	if err := recv(c.t, c.exited, 20*time.Second, "the child to exit"); err != nil {
		c.t.Fatalf("child: %v", err)
	}
}
