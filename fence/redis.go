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
// key is refused (ErrStale), atomically, in one round trip.
//
// Each key is one Redis hash:
//
//	v  the value (absent once deleted)
//	f  the token of the last accepted write, decimal
//	e  when the value expires, server ms since the epoch (only with TTL; on a
//	   tombstone, when it was deleted)
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

// Entry is what Get returns.
type Entry struct {
	Value string
	// Token is the token of the write that stored Value; when Get reports no
	// value, the token of the last write or delete still kept (0 if none).
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

// Get returns the value of key and the token that wrote it. ok is false
// when there is no value (never written, deleted, expired); Entry.Token then
// still says the last token the store keeps for key.
func (s *Redis) Get(ctx context.Context, key string) (e Entry, ok bool, err error) {
	if err := core.ValidateKey(key); err != nil {
		return Entry{}, false, err
	}
	cmd := getScript.Run(ctx, s.rdb, []string{key})
	if err := cmd.Err(); err != nil {
		return Entry{}, false, s.redisErr(ctx, "fence get", key, err)
	}
	r, _ := cmd.Val().([]any)
	if len(r) != 2 {
		return Entry{}, false, s.redisErr(ctx, "fence get", key, fmt.Errorf("unexpected reply %v", cmd.Val()))
	}
	if f, isStr := r[1].(string); isStr {
		if e.Token, err = strconv.ParseInt(f, 10, 64); err != nil {
			return Entry{}, false, fmt.Errorf("fence get %q: the stored token %q is not a token: %w", key, f, err)
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
		cur, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s %q: the stored token %q is not a token: %w", op, key, v, err)
		}
		return &StaleError{Key: key, Token: token, Current: cur}
	default:
		return s.redisErr(ctx, op, key, fmt.Errorf("unexpected reply %v", v))
	}
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
