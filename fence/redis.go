package fence

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/redis/go-redis/v9"
)

// Redis is a fenced key-value store on Redis: every write carries a fencing
// token, and a write whose token is older than the last one stored for its
// key is refused (ErrStale), atomically, in one round trip. The read of a
// read-modify-write (Claim) carries the token too and stores it.
//
// Each key is one Redis hash:
//
//	v  the value (absent once deleted)
//	f  the token of the last accepted write or claim, decimal
//	e  when the value expires, server ms since the epoch (only with TTL; on a
//	   record without a value, when it was deleted or first claimed)
//
// One hash rather than the value under the key plus a companion token key:
// value and token are one Redis key, so they live in one cluster slot
// whatever the key's braces, share one expiry, and cannot be seen apart. The
// price is that the value is read with Get (or HGET key v), not GET. A key
// used with a Redis store must be written only through one.
//
// A Redis is safe for concurrent use and holds no state besides its options.
type Redis struct {
	rdb  redis.UniversalClient
	keep any // keep in ms, boxed once as a script argument
}

// Entry is what Get and Claim return.
type Entry struct {
	Value string
	// Token is the last token stored for the key: of the write that stored
	// Value, or of a Claim since; when there is no value, of the last write,
	// delete or claim still kept (0 if none).
	Token int64
}

// NewRedis returns a store on rdb: a *redis.Client (standalone, sentinel
// failover) or a *redis.ClusterClient, whose options must set
// ContextTimeoutEnabled so a context deadline bounds every call (as core.New
// requires; core.ErrBadRedisClient otherwise). NewRedis does no I/O.
func NewRedis(rdb redis.UniversalClient, opts ...Option) (*Redis, error) {
	if err := core.CheckDeadlines(rdb); err != nil {
		return nil, err
	}
	cfg := config{keep: DefaultKeep}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Redis{rdb: rdb, keep: cfg.keep.Milliseconds()}, nil
}

// Set stores value under key if token is at least the last token stored for
// key, and records token as the last. A newer stored token refuses the
// write with a *StaleError (ErrStale) and changes nothing.
//
// An equal token is accepted: tokens are unique per lease, so an equal one
// is the same holder writing again (a second update in one request), or
// go-redis re-sending this very write after a timeout (MaxRetries). Both
// must succeed, so a retried Set never reports ErrStale for its own write.
// Fence one key with the tokens of one lock key: tokens of different lock
// keys are not ordered against each other.
func (s *Redis) Set(ctx context.Context, key, value string, token int64, opts ...SetOption) error {
	if err := core.ValidateKey(key); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	var sc setConfig
	for _, o := range opts {
		o(&sc)
	}
	var ttl any = zero
	if sc.ttl != 0 {
		if sc.ttl < time.Millisecond {
			return fmt.Errorf("%w: fence TTL %v is below 1ms", core.ErrInvalidOption, sc.ttl)
		}
		ttl = sc.ttl.Milliseconds()
	}
	cmd := setScript.Run(ctx, s.rdb, []string{key}, value, token, ttl, s.keep)
	return s.written(ctx, cmd, "fence set", key, token)
}

// Delete removes the value of key if token is at least the last token
// stored, and keeps the token (a tombstone, for the store's keep) so a
// late write with an older token is still refused. It writes the tombstone
// when there is no value too. A newer stored token refuses it (ErrStale).
// Idempotent per token, as Set.
func (s *Redis) Delete(ctx context.Context, key string, token int64) error {
	if err := core.ValidateKey(key); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	cmd := deleteScript.Run(ctx, s.rdb, []string{key}, token, s.keep)
	return s.written(ctx, cmd, "fence delete", key, token)
}

// Get returns the value of key and the token stored with it. ok is false
// when there is no value (never written, deleted, expired); Entry.Token then
// still says the last token the store keeps for key.
//
// Get does not fence: what a holder reads with it and then writes back may
// overwrite a write it never saw. Read with Claim when the read decides the
// write.
func (s *Redis) Get(ctx context.Context, key string) (e Entry, ok bool, err error) {
	if err := core.ValidateKey(key); err != nil {
		return Entry{}, false, err
	}
	return s.entry(ctx, getScript.Run(ctx, s.rdb, []string{key}), "fence get", key, 0)
}

// Claim is the read of a read-modify-write: it returns what Get would have
// returned, and in the same atomic step records token as the last token
// stored for key, as a write does. From then on a Set, Delete or Claim with
// an older token is refused (ErrStale), so nothing a holder whose lease
// ended sends can land between this read and the claimer's own Set; if a
// newer holder claims in between, the claimer's Set is the one refused. A
// newer token already stored refuses the claim itself (ErrStale) and
// changes nothing.
//
// Read with Claim whenever what is read decides what is written. After a
// Get, an older holder's write that lands before the Set is accepted (no
// newer token is stored yet), and the Set then overwrites it unseen: the
// older holder's update is lost although every write was fenced.
//
// An equal token is accepted, as by Set: a holder's second read, or
// go-redis re-sending the claim (MaxRetries). The value and its expiry are
// left as they are; a key without a value keeps the claimed token for the
// store's keep (WithKeep) from the claim on.
func (s *Redis) Claim(ctx context.Context, key string, token int64) (e Entry, ok bool, err error) {
	if err := core.ValidateKey(key); err != nil {
		return Entry{}, false, err
	}
	if err := checkToken(token); err != nil {
		return Entry{}, false, err
	}
	return s.entry(ctx, claimScript.Run(ctx, s.rdb, []string{key}, token, s.keep), "fence claim", key, token)
}

// entry turns the reply of get.lua or claim.lua into Get's results: {value
// or nil, token or nil}, or (claim.lua only) the newer stored token that
// refused the claim.
func (s *Redis) entry(ctx context.Context, cmd *redis.Cmd, op, key string, token int64) (e Entry, ok bool, err error) {
	if err := cmd.Err(); err != nil {
		return Entry{}, false, s.redisErr(ctx, op, key, err)
	}
	if cur, isStr := cmd.Val().(string); isStr && token != 0 {
		return Entry{}, false, staleErr(op, key, cur, token)
	}
	r, _ := cmd.Val().([]any)
	if len(r) != 2 {
		return Entry{}, false, s.redisErr(ctx, op, key, fmt.Errorf("unexpected reply %v", cmd.Val()))
	}
	if f, isStr := r[1].(string); isStr {
		if e.Token, err = strconv.ParseInt(f, 10, 64); err != nil {
			return Entry{}, false, fmt.Errorf("%s %q: the stored token %q is not a token: %w", op, key, f, err)
		}
	}
	e.Value, ok = r[0].(string)
	return e, ok, nil
}

var zero any = int64(0)

// written turns the reply of set.lua or delete.lua into Set's error.
func (s *Redis) written(ctx context.Context, cmd *redis.Cmd, op, key string, token int64) error {
	if err := cmd.Err(); err != nil {
		return s.redisErr(ctx, op, key, err)
	}
	switch v := cmd.Val().(type) {
	case int64:
		return nil
	case string:
		return staleErr(op, key, v, token)
	default:
		return s.redisErr(ctx, op, key, fmt.Errorf("unexpected reply %v", v))
	}
}

// staleErr is the *StaleError for a refused token, cur being the newer
// token a script found stored.
func staleErr(op, key, cur string, token int64) error {
	n, err := strconv.ParseInt(cur, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q: the stored token %q is not a token: %w", op, key, cur, err)
	}
	return &StaleError{Key: key, Token: token, Current: n}
}

// redisErr classifies a failed call: the caller's ctx error when ctx ended,
// ErrNotRecord for WRONGTYPE, core.ErrUnavailable otherwise.
func (s *Redis) redisErr(ctx context.Context, op, key string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s %q: %w", op, key, ctxErr)
	}
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return fmt.Errorf("%s %q: %w: %v", op, key, ErrNotRecord, err)
	}
	return &core.UnavailableError{Op: op, Key: key, Err: err}
}
