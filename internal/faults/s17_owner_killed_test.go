package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// The handler's process killed mid-flight (SIGKILL: no completion, no
// abandon, no renewal), before its write and after it. While it lives,
// every retry finds the payment in progress and none runs beside it; once
// it is dead, a client that retries after the hint it was given (what is
// left of the claim: the 409's Retry-After) takes the record over on its
// first retry after the kill's claim ran out: at most two attempts after
// the kill, counted, not timed. The taker's fenced read finds what the
// dead owner wrote, so the payment is applied once either way.
func TestS17ClaimOwnerKilled(t *testing.T) {
	for _, wrote := range []bool{false, true} {
		name := "before its write"
		if wrote {
			name = "after its write"
		}
		t.Run(name, func(t *testing.T) {
			const ttl = 500 * time.Millisecond
			const id = 9
			p := newPayments(t, payFenced, ttl, id)
			lock := redistest.Start(t)
			reps := []*replica{p.replica("r0", lock.NewClient(), ""), p.replica("r1", lock.NewClient(), "")}
			ctx := testkit.Context(t, 30*time.Second)

			owner := startClaimHolder(t, p, lock, []int64{id}, wrote)
			cm := owner.msgs[0]

			// The owner lives: every retry is refused, for three TTLs.
			live := 0
			for time.Since(time.Unix(0, cm.From)) < 3*ttl {
				r := reps[live%len(reps)]
				_, err := r.claim(ctx, id, payFingerprint(id))
				if !errors.Is(err, core.ErrNotAcquired) {
					t.Fatalf("retry %d while the owner lives: %v, want ErrNotAcquired (in progress)", live+1, err)
				}
				live++
				sleep(ctx, min(retryAfter(err), ttl/2))
			}

			killed := owner.kill()
			cl, r, attempts := retryUntilClaimed(t, ctx, reps, id, 2)
			if cl.Replayed() || !cl.TakenOver || cl.Token <= cm.Token {
				t.Fatalf("claim after the kill %+v, the dead owner's token %d: want it taken over with a larger token", cl, cm.Token)
			}
			answer, answered, err := p.serve(ctx, r, id, cl, nil)
			if !answered || err != nil {
				t.Fatalf("the taker's handler: answered %v, %v", answered, err)
			}
			if e := p.ledger.Entry(payKey(id)); wrote != (e.Found == 1) {
				t.Errorf("ledger %v: the dead owner wrote = %v, the taker must find exactly that", e, wrote)
			}
			// Every later retry replays the taker's answer, on either replica.
			for _, r := range reps {
				again, err := r.claim(ctx, id, payFingerprint(id))
				if err != nil || !again.Replayed() || string(again.Payload) != answer {
					t.Fatalf("retry after the takeover's answer: %+v, %v; want the replay of %q", again, err, answer)
				}
			}
			t.Logf("%d retries refused while the owner lived, taken over at attempt %d, %v after the kill", live, attempts, time.Since(killed).Round(time.Millisecond))
			p.verdict()
		})
	}
}

// claimHolder is a child process holding claims of payments.
type claimHolder struct {
	t    *testing.T
	p    *payments
	ch   *child
	msgs []childMsg
}

// startClaimHolder starts a child that claims each of ids on lock,
// applies each through the payments' store when apply says so, and then
// holds the claims, renewed, until it is killed. Its runs are in the
// Ledger when it returns.
func startClaimHolder(t *testing.T, p *payments, lock *redistest.Server, ids []int64, apply bool) *claimHolder {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	ch := startChild(t, "claim-holder", "LOCK_ADDR="+lock.Addr(), "STORE_ADDR="+p.store.Addr(),
		"LOCK_TTL="+p.ttl.String(), "PAY_IDS="+strings.Join(list, ","), "PAY_APPLY="+strconv.FormatBool(apply))
	h := &claimHolder{t: t, p: p, ch: ch}
	for range ids {
		m := ch.next("claimed")
		key := payKey(m.Value)
		p.ledger.Ran(key, false)
		if m.OK {
			p.ledger.Applied(key)
		}
		h.msgs = append(h.msgs, m)
	}
	return h
}

// kill SIGKILLs the holder and records its believed holds, each from its
// claim until now, in the History; it returns when it was killed.
func (h *claimHolder) kill() time.Time {
	h.t.Helper()
	_ = h.ch.cmd.Process.Kill()
	at := time.Now()
	for _, m := range h.msgs {
		h.p.hist.Add(faults.Interval{Key: payKey(m.Value), Who: "killed child", Token: m.Token,
			From: time.Unix(0, m.From), To: at, End: faults.EndContext})
	}
	return at
}

// claimHolderChild is the child of startClaimHolder: it claims every
// payment of PAY_IDS, applies it (fenced by its claim's token) when
// PAY_APPLY says so, says "claimed" for each, and holds them for ever.
func claimHolderChild() error {
	ttl, err := time.ParseDuration(os.Getenv("LOCK_TTL"))
	if err != nil {
		return err
	}
	opts := func(addr string) *redis.Options {
		return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second}
	}
	lockRdb, storeRdb := redis.NewClient(opts(os.Getenv("LOCK_ADDR"))), redis.NewClient(opts(os.Getenv("STORE_ADDR")))
	c, err := core.New(lockRdb, core.WithOwner("killed child"), core.WithTTL(ttl))
	if err != nil {
		return err
	}
	store, err := fence.NewRedis(storeRdb)
	if err != nil {
		return err
	}
	apply := os.Getenv("PAY_APPLY") == "true"
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	for _, s := range strings.Split(os.Getenv("PAY_IDS"), ",") {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		from := time.Now()
		cl, err := c.Claim(ctx, payKey(id), core.ClaimRequest{Name: "pay", Fingerprint: payFingerprint(id)})
		if err != nil || cl.Lease == nil {
			return fmt.Errorf("claim of %d: %+v, %v", id, cl, err)
		}
		if apply {
			if _, _, err := store.Claim(ctx, payKey(id), cl.Token); err != nil {
				return err
			}
			if err := store.Set(ctx, payKey(id), "1", cl.Token); err != nil {
				return err
			}
		}
		m := childMsg{Ev: "claimed", Value: id, Token: cl.Token, From: from.UnixNano(), OK: apply}
		if err := out.Encode(m); err != nil {
			return err
		}
	}
	select {}
}
