package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"strconv"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/redis/go-redis/v9"
)

// A handler holding order 42's lock writes its status with the lease's
// token. If the lease was lost and another holder wrote since, the write is
// refused instead of overwriting the newer state.
func ExampleRedis_Set() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	locks, err := core.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	store, err := fence.NewRedis(rdb)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	err = locks.Do(ctx, "order:42", func(ctx context.Context) error {
		lease, _ := core.LeaseFromContext(ctx)
		return store.Set(ctx, "orders:42:status", "paid", lease.Token())
	})
	if errors.Is(err, fence.ErrStale) {
		log.Print("the lock was lost before the write landed; a newer holder's status stands")
	}
}

// An increment is a read-modify-write: its read is a Claim, so a holder
// whose lease ended cannot land its write between this read and this
// write (its write is refused instead).
func ExampleRedis_Claim() {
	var store *fence.Redis // from fence.NewRedis
	var lease *core.Lease  // from locks.Acquire
	ctx := lease.Context()

	e, _, err := store.Claim(ctx, "orders:42:total", lease.Token())
	if err != nil {
		log.Fatal(err) // ErrStale: a newer holder claimed or wrote since
	}
	total, _ := strconv.Atoi(e.Value) // no value yet: 0
	err = store.Set(ctx, "orders:42:total", strconv.Itoa(total+5), lease.Token())
	if errors.Is(err, fence.ErrStale) {
		log.Print("a newer holder claimed after this read: its update stands")
	}
}

// The same in SQL: the token column and the condition in the UPDATE make the
// database refuse an older token; CheckRows reports it as ErrStale.
func ExampleCheckRows() {
	var db *sql.DB        // any driver: the pattern is plain SQL
	var lease *core.Lease // from locks.Acquire
	ctx := lease.Context()

	res, err := db.ExecContext(ctx,
		`UPDATE orders SET status = $1, fence = $2 WHERE id = $3 AND fence <= $2`,
		"paid", lease.Token(), 42)
	if err != nil {
		log.Fatal(err)
	}
	if err := fence.CheckRows(res, "orders:42", lease.Token()); errors.Is(err, fence.ErrStale) {
		// stale, or no order 42: SELECT fence FROM orders WHERE id = 42 tells which
		log.Print(err)
	}
}
