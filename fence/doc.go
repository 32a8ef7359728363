// Package fence is the resource side of fencing tokens: stores that refuse
// a write whose token is older than one they already accepted.
//
// # Why the lock is not enough
//
// A lease can end while its holder still runs: a GC or VM pause, or a
// partition, longer than the TTL. The engine cancels the lease's context as
// soon as it can no longer confirm the lease, but a holder that was paused
// does not look at its context while paused, and a write already in flight
// lands whenever it lands. Meanwhile another process took the lock and
// wrote. No lock can stop that late write, since the late writer does not
// ask the lock again; only the resource sees it. So every write carries the
// lease's token (Lease.Token, strictly increasing per lock key), and the
// resource refuses a token older than the newest it has seen, in the same
// atomic step as the write.
//
// # Redis
//
// A Redis store keeps, next to each value, the token that wrote it, and
// compares and writes in one Lua script:
//
//	store, err := fence.NewRedis(rdb) // the go-redis client core.New got
//	...
//	lease, err := locks.Acquire(ctx, "order:42")
//	...
//	err = store.Set(ctx, "orders:42:status", "paid", lease.Token())
//	if errors.Is(err, fence.ErrStale) {
//		// another holder wrote after this lease ended: drop this write
//	}
//
// Set and Delete accept a token equal to the stored one: tokens are unique
// per lease, so it is the same holder writing again, or go-redis re-sending
// the same write after a timeout (MaxRetries) — which must not come back as
// ErrStale. Get returns the value and the token that wrote it. A deleted or
// expired value keeps its token for the store's keep (WithKeep, a day by
// default), so a late writer is refused after the value is gone too; after
// that the key is forgotten and any token is accepted again. Fence one
// resource key with the tokens of one lock key. The store keeps its tokens
// as well as Redis keeps its data: a failover to a replica that missed the
// last write forgets that write's token (WAIT and persistence help here as
// they do for the locks).
//
// Left out on purpose: reads that must themselves be fenced (a read needs no
// token; a read-modify-write is fenced by its write), partial updates of a
// stored value (hash fields, counters), and a hook for custom scripts.
// Store one value per key, or fence a larger structure in SQL.
//
// # SQL
//
// A table fences its rows with a token column and a condition in the write
// itself, which the database applies atomically with the write:
//
//	ALTER TABLE orders ADD COLUMN fence bigint NOT NULL DEFAULT 0;
//
//	-- the row exists: a fenced UPDATE
//	UPDATE orders SET status = $1, fence = $2 WHERE id = $3 AND fence <= $2;
//
// One row affected: written. Zero: either a newer token is stored, or there
// is no order $3. CheckRows reports zero rows as ErrStale; when the
// difference matters, read the row back:
//
//	SELECT fence FROM orders WHERE id = $3; -- no row: missing; fence > $2: stale
//
// When the row may not exist yet, an upsert leaves only one reason for zero
// rows, a newer token:
//
//	INSERT INTO orders (id, status, fence) VALUES ($3, $1, $2)
//	ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, fence = EXCLUDED.fence
//	WHERE orders.fence <= EXCLUDED.fence;
//
// The comparison is <=, as in the Redis store: a holder may update its row
// twice, and a re-sent statement succeeds again. A fenced delete is a soft
// delete (a deleted flag set by a fenced UPDATE): a removed row forgets its
// token, and a late upsert would bring it back. The package needs no SQL
// driver; see CheckRows for MySQL's way of counting affected rows.
package fence
