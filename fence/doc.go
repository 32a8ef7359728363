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
// atomic step as the write. A read that a write is computed from carries it
// too (a claim, see Read-modify-write below).
//
// # Redis
//
// A Redis store keeps, next to each value, the last token it accepted, and
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
// Set, Delete and Claim accept a token equal to the stored one: tokens are
// unique per lease, so it is the same holder writing again, or go-redis
// re-sending the same write after a timeout (MaxRetries) — which must not
// come back as ErrStale. Get returns the value and the last token stored. A deleted or
// expired value keeps its token for the store's keep (WithKeep, a day by
// default), so a late writer is refused after the value is gone too; after
// that the key is forgotten and any token is accepted again. Fence one
// resource key with the tokens of one lock key. The store keeps its tokens
// as well as Redis keeps its data: a failover to a replica that missed the
// last write forgets that write's token (WAIT and persistence help here as
// they do for the locks).
//
// Left out on purpose: partial updates of a stored value (hash fields,
// counters) and a hook for custom scripts. Store one value per key, or
// fence a larger structure in SQL.
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
//
// # Read-modify-write
//
// A fenced write does not fence what it was computed from. Holder A reads,
// its lease ends, holder B takes the lock and reads the same value, then
// A's write lands: no newer token is stored yet, so it is accepted. B's
// write, computed from what B read, is accepted over it, and A's update is
// lost although every write carried its token. So the read that decides a
// write stores the reader's token in the same atomic step as the read (a
// claim): once B has claimed, A's write is refused.
//
// On Redis, read with Claim, then write with Set:
//
//	e, ok, err := store.Claim(ctx, "orders:42:total", lease.Token())
//	...
//	err = store.Set(ctx, "orders:42:total", next(e.Value), lease.Token())
//
// Get then Set is not safe for a read-modify-write; Get is for reads that
// decide no write. A claim with an older token than the stored one is
// refused (ErrStale) and reads nothing.
//
// In SQL, three forms are safe. One statement that reads and writes:
//
//	UPDATE orders SET total = total + $1, fence = $2 WHERE id = $3 AND fence <= $2;
//
// A claim as the read, then the fenced UPDATE above as the write. The claim
// is a fenced UPDATE that stores only the token, and returns the row:
//
//	UPDATE orders SET fence = $2 WHERE id = $3 AND fence <= $2 RETURNING status;
//
// No row: a newer token is stored, or there is no order $3. Where UPDATE
// has no RETURNING (MySQL), run the claim without it and then SELECT the
// row: the claim must come before the read. Or one transaction that reads
// the row with
//
//	SELECT status FROM orders WHERE id = $3 FOR UPDATE;
//
// and then runs the fenced UPDATE: the row lock keeps every other writer
// out until the transaction ends. A stalled holder's transaction is then
// not refused but makes the next holder wait, who reads what it wrote.
//
// Not safe: a plain SELECT of the row
//
//	SELECT status FROM orders WHERE id = $3;
//
// then the fenced UPDATE, as separate statements or in one transaction at
// READ COMMITTED (PostgreSQL's default).
package fence
