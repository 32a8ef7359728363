package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Scenario 17: payments retried with an idempotency key (core's Claim and
// Complete) while the fault breaks the record's side, judged by two
// witnesses outside the engine: a Ledger, to which each handler says what
// its own store calls returned (applied, found applied, refused), and a
// History of the claims' believed holds (no two handlers of one payment at
// once).
//
// A payment's handler is a fenced read-modify-write in a store of its own
// (package fence, on a redis-server no fault touches): it reads the
// payment's entry with its claim's fencing token (Claim) and applies the
// payment (Set, the same token) unless an earlier owner did. That is the
// handler the issue calls one "that must not run twice": the record makes
// a retry replay the answer, and the fence covers the one case the record
// cannot, an owner that crashed or stalled mid-flight and is taken over.
//
// The control handler reads with Get and writes with a plain HSET: the
// Ledger must catch it applying a payment twice when a stalled owner's
// write lands after the new owner's.
type payMode string

const (
	payFenced   payMode = "fenced handler"
	payUnfenced payMode = "control unfenced handler"
)

// payKey is a payment's idempotency key, and its entry's key in the store.
func payKey(id int64) string { return "pay:" + strconv.FormatInt(id, 10) }

// payFingerprint is what the request of payment id hashes to; another
// request under its key (a client reusing a key for another payment)
// has another.
func payFingerprint(id int64) string { return "amount=" + strconv.FormatInt(id*7, 10) }

// payAnswer is the answer a handler stores for payment id under token.
func payAnswer(id, token int64) string { return fmt.Sprintf("paid %s (token %d)", payKey(id), token) }

// payments is one run of scenario 17.
type payments struct {
	t      *testing.T
	mode   payMode
	ttl    time.Duration
	store  *redistest.Server
	ledger *faults.Ledger
	hist   *faults.History
}

func newPayments(t *testing.T, mode payMode, ttl time.Duration, ids ...int64) *payments {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = payKey(id)
	}
	return &payments{t: t, mode: mode, ttl: ttl, store: redistest.Start(t), ledger: faults.NewLedger(names...), hist: faults.NewHistory()}
}

// replica is one process serving payments: a core Client on the records'
// Redis, and its clients of the store.
type replica struct {
	name  string
	c     *core.Client
	store *fence.Redis
	rdb   *redis.Client
}

// replica returns a replica named name whose Client is on lock and whose
// store client goes through storeAddr ("" for none). Its store calls wait
// up to 20 s for an answer, so a write held in a stalled proxy comes back
// with what the store did, never as an unknown.
func (p *payments) replica(name string, lock redis.UniversalClient, storeAddr string, opts ...core.Option) *replica {
	rdb := p.store.NewClient(func(o *redis.Options) {
		if storeAddr != "" {
			o.Addr = storeAddr
		}
		o.ReadTimeout, o.WriteTimeout = 20*time.Second, 20*time.Second
	})
	s, err := fence.NewRedis(rdb)
	if err != nil {
		p.t.Fatal(err)
	}
	opts = append([]core.Option{core.WithOwner(name), core.WithTTL(p.ttl)}, opts...)
	return &replica{name: name, c: newClient(p.t, lock, opts...), store: s, rdb: rdb}
}

// claim is one attempt of a request for payment id with fingerprint fp.
func (r *replica) claim(ctx context.Context, id int64, fp string) (core.Claim, error) {
	return r.c.Claim(ctx, payKey(id), core.ClaimRequest{Name: "pay", Fingerprint: fp})
}

// errLeaseEnded: the handler saw its claim's lease end before it wrote,
// and wrote nothing.
var errLeaseEnded = errors.New("the claim's lease ended before the write")

// apply is the payment's handler: it reads the payment's entry, and
// applies it unless it was applied, with token. applied says which;
// an error, that it wrote nothing it knows of (ErrStale: a newer owner
// read or wrote first). ctx is the request's; lease the claim's Context,
// looked at before each store call as a handler bound to it would.
func (p *payments) apply(ctx, lease context.Context, r *replica, id, token int64, beforeWrite func()) (applied bool, err error) {
	key := payKey(id)
	if lease.Err() != nil {
		return false, errLeaseEnded
	}
	var e fence.Entry
	if p.mode == payFenced {
		e, _, err = r.store.Claim(ctx, key, token)
	} else {
		e, _, err = r.store.Get(ctx, key)
	}
	if err != nil {
		return false, err
	}
	if e.Value != "" {
		return false, nil
	}
	if lease.Err() != nil {
		return false, errLeaseEnded
	}
	if beforeWrite != nil {
		beforeWrite()
	}
	if p.mode == payFenced {
		err = r.store.Set(ctx, key, "1", token)
	} else {
		err = r.rdb.HSet(ctx, key, "v", "1").Err()
	}
	return err == nil, err
}

// serve runs payment id's handler under cl, a claim r got, and records it
// in the witnesses: a believed hold from the claim until the handler
// ends, a run in the Ledger and what came of it. The handler answers
// (answered) when it applied the payment or found it applied; then it
// completes the claim with the answer (complete's error says how that
// went: a claim that ended stores nothing). Otherwise it abandons the
// claim and the client retries.
func (p *payments) serve(ctx context.Context, r *replica, id int64, cl core.Claim, beforeWrite func()) (answer string, answered bool, complete error) {
	key := payKey(id)
	hold := p.hist.Begin(r.name, cl.Lease)
	p.ledger.Ran(key, cl.TakenOver)
	applied, err := p.apply(ctx, cl.Lease.Context(), r, id, cl.Token, beforeWrite)
	hold.Released()
	switch {
	case err != nil:
		if errors.Is(err, fence.ErrStale) {
			p.ledger.Refused(key)
		}
		_ = cl.Lease.Release(ctx)
		return "", false, err
	case applied:
		p.ledger.Applied(key)
	default:
		p.ledger.Found(key)
	}
	answer = payAnswer(id, cl.Token)
	return answer, true, cl.Lease.Complete(ctx, []byte(answer))
}

// recordKey is the Redis key of an idempotency record with the default
// prefix (docs/key-layout.md, v1).
func recordKey(key string) string { return "lockkit:v1:i:" + key }

// storedAnswer reads payment id's stored answer with a plain client: the
// record's field d (core/scripts/claim.lua), "" when none.
func storedAnswer(ctx context.Context, rdb redis.UniversalClient, id int64) string {
	return rdb.HGet(ctx, recordKey(payKey(id)), "d").Val()
}

// retryAfter is the hint a refused attempt gives a client: what is left
// of the owner's claim (the 409's Retry-After), at least a millisecond.
func retryAfter(err error) time.Duration {
	var na *core.NotAcquiredError
	if errors.As(err, &na) && na.Holder.TTL > time.Millisecond {
		return na.Holder.TTL
	}
	return time.Millisecond
}

// retryUntilClaimed is a client retrying a request for payment id, each
// attempt on the next of reps, after the hint the last refusal gave,
// until one claims the record; the test fails if that takes more than
// limit attempts or an attempt fails otherwise. It returns the claim, the
// replica that got it and the attempts made.
func retryUntilClaimed(t *testing.T, ctx context.Context, reps []*replica, id int64, limit int) (core.Claim, *replica, int) {
	t.Helper()
	for attempts := 1; ; attempts++ {
		r := reps[(attempts-1)%len(reps)]
		cl, err := r.claim(ctx, id, payFingerprint(id))
		switch {
		case err == nil && cl.Lease != nil:
			return cl, r, attempts
		case err == nil:
			t.Fatalf("attempt %d: replayed %q, want the claim", attempts, cl.Payload)
		case !errors.Is(err, core.ErrNotAcquired):
			t.Fatalf("attempt %d: %v", attempts, err)
		case attempts >= limit:
			t.Fatalf("attempt %d still refused (%v): want the claim within %d attempts, each after the hint the last refusal gave", attempts, err, limit)
		}
		sleep(ctx, retryAfter(err))
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// verdict asserts the witnesses of a fenced run: every payment
// applied exactly once, and no two handlers of one payment at once.
func (p *payments) verdict() {
	t := p.t
	t.Helper()
	for _, bad := range p.ledger.NotOnce() {
		t.Errorf("ledger: %s", bad)
	}
	verdict(t, p.hist, nil, false)
	t.Logf("%s: %d payments, %v", p.mode, p.ledger.Len(), p.ledger.Totals())
}
