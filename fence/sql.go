package fence

import (
	"database/sql"
	"fmt"
)

// CheckRows turns the result of a fenced SQL write into the error a fenced
// Redis write returns: nil when it changed a row, a *StaleError (ErrStale)
// when it changed none. key and token only name the write in the error.
//
// Zero rows from a fenced UPDATE mean a newer token is stored or there is no
// such row; the package documentation shows how to tell them apart, and the
// upsert form, whose zero rows mean only a newer token. It counts on
// RowsAffected counting the rows the WHERE matched, as PostgreSQL does;
// MySQL counts changed rows unless the connection sets CLIENT_FOUND_ROWS
// (clientFoundRows=true in go-sql-driver/mysql), without which a re-sent
// write that changes nothing would look stale. A driver that cannot report
// affected rows makes it return that error.
func CheckRows(res sql.Result, key string, token int64) error {
	if res == nil {
		return fmt.Errorf("fence: write to %q: nil sql.Result (check the Exec error first)", key)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: write to %q: rows affected: %w", key, err)
	}
	if n == 0 {
		return &StaleError{Key: key, Token: token}
	}
	return nil
}
