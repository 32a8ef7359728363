package fence_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/fence"
)

type result struct {
	n   int64
	err error
}

func (r result) LastInsertId() (int64, error) { return 0, errors.New("no id") }
func (r result) RowsAffected() (int64, error) { return r.n, r.err }

func TestCheckRows(t *testing.T) {
	if err := fence.CheckRows(result{n: 1}, "orders:1", 5); err != nil {
		t.Fatalf("one row: %v", err)
	}
	wantStale(t, fence.CheckRows(result{n: 0}, "orders:1", 5), "orders:1", 5, 0)
	driverErr := errors.New("driver cannot count")
	if err := fence.CheckRows(result{err: driverErr}, "orders:1", 5); !errors.Is(err, driverErr) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("RowsAffected failing: %v", err)
	}
	if err := fence.CheckRows(nil, "orders:1", 5); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("nil result: %v", err)
	}
}

// The statements the package documentation gives, verbatim.
const (
	sqlUpdate = `UPDATE orders SET status = $1, fence = $2 WHERE id = $3 AND fence <= $2;`
	sqlSelect = `SELECT fence FROM orders WHERE id = $3;`
	sqlUpsert = `INSERT INTO orders (id, status, fence) VALUES ($3, $1, $2)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, fence = EXCLUDED.fence
WHERE orders.fence <= EXCLUDED.fence;`

	// read-modify-write
	sqlAdd     = `UPDATE orders SET total = total + $1, fence = $2 WHERE id = $3 AND fence <= $2;`
	sqlClaim   = `UPDATE orders SET fence = $2 WHERE id = $3 AND fence <= $2 RETURNING status;`
	sqlLockRow = `SELECT status FROM orders WHERE id = $3 FOR UPDATE;`
	sqlRead    = `SELECT status FROM orders WHERE id = $3;` // not safe before a write
)

// TestSQLPatternInDoc keeps the tested statements and the documentation
// the same text.
func TestSQLPatternInDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(src), "\n//\t", "\n")
	for _, stmt := range []string{sqlUpdate, sqlUpsert, strings.TrimSuffix(sqlSelect, ";"), sqlAdd, sqlClaim, sqlLockRow, sqlRead} {
		if !strings.Contains(doc, stmt) {
			t.Errorf("doc.go does not show the tested statement:\n%s", stmt)
		}
	}
}

// TestSQLPatternOnPostgres runs the documented statements on a real
// PostgreSQL through psql (the root module takes no SQL driver), as
// prepared statements with the documentation's parameters, and checks the
// rows each one affects. FENCE_PG is a libpq connection string (default
// host=127.0.0.1 dbname=test); skipped without psql or a server.
func TestSQLPatternOnPostgres(t *testing.T) {
	psql, conn := postgres(t)
	upd := strings.TrimSuffix(sqlUpdate, ";")
	sel := strings.ReplaceAll(strings.TrimSuffix(sqlSelect, ";"), "$3", "$1")
	ups := strings.TrimSuffix(sqlUpsert, ";")
	script := `CREATE TEMP TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, fence bigint NOT NULL DEFAULT 0);
PREPARE upd(text, bigint, bigint) AS ` + upd + `;
PREPARE sel(bigint) AS ` + sel + `;
PREPARE ups(text, bigint, bigint) AS ` + ups + `;
INSERT INTO orders (id, status) VALUES (1, 'new');
EXECUTE upd('paid', 200, 1);
EXECUTE upd('late', 100, 1);
EXECUTE upd('paid', 200, 1);
EXECUTE upd('shipped', 200, 1);
EXECUTE upd('x', 300, 2);
EXECUTE sel(1);
EXECUTE sel(2);
EXECUTE ups('new', 300, 2);
EXECUTE ups('late', 250, 2);
EXECUTE ups('new', 300, 2);
EXECUTE ups('paid', 400, 2);
SELECT id, status, fence FROM orders ORDER BY id;
`
	want := []string{
		"CREATE TABLE", "PREPARE", "PREPARE", "PREPARE", "INSERT 0 1",
		"UPDATE 1", // newer token
		"UPDATE 0", // older token: stale
		"UPDATE 1", // the same write re-sent
		"UPDATE 1", // the same holder's second update
		"UPDATE 0", // no such row
		"200",      // row 1's token: the 0 rows for 100 were stale; row 2: no line, missing
		"INSERT 0 1", "INSERT 0 0", "INSERT 0 1", "INSERT 0 1",
		"1|shipped|200", "2|paid|400",
	}
	cmd := exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", "-A", "-t", conn)
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr.String())
	}
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("psql output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// postgres returns psql's path and the connection string of the test
// database (FENCE_PG, a libpq connection string; default host=127.0.0.1
// dbname=test), or skips the test: CI's machine need not run PostgreSQL.
func postgres(t *testing.T) (psql, conn string) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not on PATH")
	}
	conn = os.Getenv("FENCE_PG")
	if conn == "" {
		conn = "host=127.0.0.1 dbname=test connect_timeout=5"
	}
	if out, err := exec.Command(psql, "-X", "-Atc", "select 1", conn).CombinedOutput(); err != nil {
		t.Skipf("no PostgreSQL at %q: %v %s", conn, err, out)
	}
	return psql, conn
}
