package fence_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/testkit"
)

// TestSQLReadModifyWriteOnPostgres runs the documentation's read-modify-
// write forms on a real PostgreSQL, each in the interleaving that loses an
// update when the read does not fence: A reads, B (the next holder, a newer
// token) reads, A's write arrives, B writes. Each holder appends its name
// to the status it read, so the final status says whose updates it holds.
// Two psql sessions are the two holders; the statements go in one at a
// time, each waiting for the previous one's answer.
func TestSQLReadModifyWriteOnPostgres(t *testing.T) {
	psql, conn := postgres(t)
	claim := func(s *pgSession, tok int64) string {
		return s.status(s.run("EXECUTE clm('', %d, 1)", tok), "UPDATE 1")
	}
	claimThenSelect := func(s *pgSession, tok int64) string {
		s.want(s.run("EXECUTE clm0('', %d, 1)", tok), "UPDATE 1")
		return s.status(s.run("EXECUTE sel('', 0, 1)"))
	}
	plainSelect := func(s *pgSession, _ int64) string { return s.status(s.run("EXECUTE sel('', 0, 1)")) }

	t.Run("claim", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		aw, bw := interleave(a, b, claim)
		a.want(aw, "UPDATE 0") // refused
		b.want(bw, "UPDATE 1")
		b.want(b.run("EXECUTE sel('', 0, 1)"), "new+B")
		// A claim of a row that is not there returns no row.
		b.want(b.run("EXECUTE clm('', %d, 2)", pgTokB), "UPDATE 0")
	})
	t.Run("claim, then SELECT", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		aw, bw := interleave(a, b, claimThenSelect)
		a.want(aw, "UPDATE 0")
		b.want(bw, "UPDATE 1")
		b.want(b.run("EXECUTE sel('', 0, 1)"), "new+B")
	})
	t.Run("one statement", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		b.want(b.run("EXECUTE add(5, %d, 1)", pgTokB), "UPDATE 1")
		a.want(a.run("EXECUTE add(7, %d, 1)", pgTokA), "UPDATE 0") // late: refused
		b.want(b.run("EXECUTE add(5, %d, 1)", pgTokB), "UPDATE 1") // re-sent or second: accepted
		b.want(b.run("SELECT total FROM orders WHERE id = 1"), "10")
	})
	t.Run("SELECT FOR UPDATE", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		a.want(a.run("BEGIN"), "BEGIN")
		stA := a.status(a.run("EXECUTE lck('', 0, 1)"))
		b.want(b.run("BEGIN"), "BEGIN")
		b.send("EXECUTE lck('', 0, 1)")
		b.waitsForLock(t, a)
		a.want(a.run("EXECUTE upd('%s+A', %d, 1)", stA, pgTokA), "UPDATE 1")
		a.want(a.run("COMMIT"), "COMMIT")
		stB := b.status(b.result()) // B reads what A wrote
		b.want(b.run("EXECUTE upd('%s+B', %d, 1)", stB, pgTokB), "UPDATE 1")
		b.want(b.run("COMMIT"), "COMMIT")
		// A holder whose transaction starts after B's is refused.
		a.want(a.run("BEGIN"), "BEGIN")
		stA = a.status(a.run("EXECUTE lck('', 0, 1)"))
		a.want(a.run("EXECUTE upd('%s+A', %d, 1)", stA, pgTokA), "UPDATE 0")
		a.want(a.run("COMMIT"), "COMMIT")
		b.want(b.run("EXECUTE sel('', 0, 1)"), "new+A+B")
	})

	// The unsafe forms: both writes are accepted and A's update is lost.
	t.Run("plain SELECT loses an update", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		aw, bw := interleave(a, b, plainSelect)
		a.want(aw, "UPDATE 1")
		b.want(bw, "UPDATE 1")
		b.want(b.run("EXECUTE sel('', 0, 1)"), "new+B")
	})
	t.Run("plain SELECT in a READ COMMITTED transaction loses an update", func(t *testing.T) {
		a, b := pgPair(t, psql, conn)
		a.want(a.run("BEGIN ISOLATION LEVEL READ COMMITTED"), "BEGIN")
		stA := plainSelect(a, pgTokA)
		b.want(b.run("BEGIN ISOLATION LEVEL READ COMMITTED"), "BEGIN")
		stB := plainSelect(b, pgTokB)
		a.want(a.run("EXECUTE upd('%s+A', %d, 1)", stA, pgTokA), "UPDATE 1")
		a.want(a.run("COMMIT"), "COMMIT")
		b.want(b.run("EXECUTE upd('%s+B', %d, 1)", stB, pgTokB), "UPDATE 1")
		b.want(b.run("COMMIT"), "COMMIT")
		b.want(b.run("EXECUTE sel('', 0, 1)"), "new+B")
	})
}

// The tokens of holder A and of the next holder, B.
const pgTokA, pgTokB = 100, 200

// interleave runs A's read, B's read, A's write, B's write, each holder
// reading with read (which returns the status it read) and writing what it
// read with its name appended, and returns what the two writes printed.
func interleave(a, b *pgSession, read func(s *pgSession, tok int64) string) (aWrite, bWrite []string) {
	stA := read(a, pgTokA)
	stB := read(b, pgTokB)
	aWrite = a.run("EXECUTE upd('%s+A', %d, 1)", stA, pgTokA)
	bWrite = b.run("EXECUTE upd('%s+B', %d, 1)", stB, pgTokB)
	return aWrite, bWrite
}

// pgSession is one psql process: one database session of one holder.
type pgSession struct {
	t      *testing.T
	name   string
	in     io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	pid    string
	n      int
}

// pgPair starts two sessions (A and B) on a schema of the test's own with
// the table orders holding order 1 ('new', total 0, fence 0), and the
// documentation's statements prepared in each: upd, clm, clm0 (the claim
// without RETURNING), lck, sel, add. Parameters are in the documentation's
// places ($1 status or amount, $2 token, $3 id), unused ones passed anyway.
func pgPair(t *testing.T, psql, conn string) (a, b *pgSession) {
	t.Helper()
	schema := fmt.Sprintf("fence_rmw_%d_%d", os.Getpid(), time.Now().UnixNano())
	setup := startPsql(t, psql, conn, "setup")
	setup.run("CREATE SCHEMA %s", schema)
	t.Cleanup(func() { _ = exec.Command(psql, "-X", "-qc", "DROP SCHEMA "+schema+" CASCADE", conn).Run() })
	setup.run(`CREATE TABLE %s.orders (id bigint PRIMARY KEY, status text NOT NULL,
		total bigint NOT NULL DEFAULT 0, fence bigint NOT NULL DEFAULT 0)`, schema)
	setup.run("INSERT INTO %s.orders (id, status) VALUES (1, 'new')", schema)
	stmt := func(s string) string { return strings.TrimSuffix(s, ";") }
	start := func(name string) *pgSession {
		s := startPsql(t, psql, conn, name)
		s.run("SET search_path = %s", schema)
		s.run("PREPARE upd(text, bigint, bigint) AS %s", stmt(sqlUpdate))
		s.run("PREPARE clm(text, bigint, bigint) AS %s", stmt(sqlClaim))
		s.run("PREPARE clm0(text, bigint, bigint) AS %s", strings.TrimSuffix(stmt(sqlClaim), " RETURNING status"))
		s.run("PREPARE lck(text, bigint, bigint) AS %s", stmt(sqlLockRow))
		s.run("PREPARE sel(text, bigint, bigint) AS %s", stmt(sqlRead))
		s.run("PREPARE add(bigint, bigint, bigint) AS %s", stmt(sqlAdd))
		return s
	}
	return start("A"), start("B")
}

const pgDone = "fence-test-statement-done"

func startPsql(t *testing.T, psql, conn, name string) *pgSession {
	t.Helper()
	cmd := exec.Command(psql, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", conn)
	s := &pgSession{t: t, name: name, lines: make(chan string, 64), stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	})
	t.Cleanup(func() {
		_ = s.in.Close()
		_ = cmd.Process.Kill()
		wg.Wait()
		_ = cmd.Wait()
	})
	s.pid = s.run("SELECT pg_backend_pid()")[0]
	return s
}

// send sends one statement without waiting for its answer.
func (s *pgSession) send(format string, args ...any) {
	s.t.Helper()
	s.n++
	if _, err := fmt.Fprintf(s.in, format+";\n\\echo %s\n", append(args, pgDone)...); err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
}

// result returns the lines psql printed for the statement sent last.
func (s *pgSession) result() []string {
	s.t.Helper()
	var out []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("session %s ended: %s", s.name, s.stderr.String())
			}
			if line == pgDone {
				return out
			}
			out = append(out, line)
		case <-timeout:
			s.t.Fatalf("session %s: no answer in 30s (so far %q)", s.name, out)
		}
	}
}

func (s *pgSession) run(format string, args ...any) []string {
	s.t.Helper()
	s.send(format, args...)
	return s.result()
}

// want checks a statement's output lines.
func (s *pgSession) want(got []string, want ...string) {
	s.t.Helper()
	if !slices.Equal(got, want) {
		s.t.Fatalf("session %s: got %q, want %q", s.name, got, want)
	}
}

// status returns the status a read returned (its one row), checking the
// lines after it (the claim's command tag).
func (s *pgSession) status(got []string, tail ...string) string {
	s.t.Helper()
	if len(got) != 1+len(tail) || !slices.Equal(got[1:], tail) {
		s.t.Fatalf("session %s: got %q, want one row then %q", s.name, got, tail)
	}
	return got[0]
}

// waitsForLock waits until s's statement waits for a lock, as other sees in
// pg_stat_activity.
func (s *pgSession) waitsForLock(t *testing.T, other *pgSession) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "session "+s.name+" waiting for the row lock", func() bool {
		got := other.run("SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'", s.pid)
		return slices.Equal(got, []string{"1"})
	})
}
