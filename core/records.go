package core

import (
	"context"
	"fmt"
	"time"
)

// The calls of idempotency records (claim.go) on a single primary: each is
// one script on the record's hash (one key, one cluster slot).

// claim runs claim.lua: the record's lookup and claim in one step. wait:
// the caller waits for the answer, so a refusal flags the record for the
// notification.
// leave is batcher.process's: a waiting claim's attempt after its first
// can be left in flight by a caller that gives up.
func (p *primary) claim(ctx context.Context, n redisNames, token string, ttl time.Duration, owner any, meta, fingerprint string, retention time.Duration, wait, leave bool) (claimReply, error) {
	w := "0"
	if wait {
		w = "1"
	}
	argv := []any{nil, nil, 1, n.keyArg, token, msArg(ttl), owner, meta, fingerprint, ms(retention), w}
	res, err := p.script(ctx, claimScript, n, argv, leave).Slice()
	if err != nil {
		return claimReply{}, err
	}
	return parseClaim(res)
}

// parseClaim reads claim.lua's reply.
func parseClaim(res []any) (claimReply, error) {
	if len(res) >= 1 {
		switch asInt(res[0]) {
		case 1:
			if len(res) >= 3 && asInt(res[1]) > 0 {
				return claimReply{state: claimClaimed, fence: asInt(res[1]), takenOver: asInt(res[2]) == 1}, nil
			}
		case 2:
			if len(res) >= 3 {
				return claimReply{state: claimCompleted, payload: []byte(asString(res[1])), fence: asInt(res[2])}, nil
			}
		case 3:
			return claimReply{state: claimMismatch}, nil
		case 0:
			if len(res) >= 5 {
				return claimReply{state: claimInProgress, holder: Holder{
					Owner:    asString(res[1]),
					Metadata: asString(res[2]),
					TTL:      time.Duration(asInt(res[3])) * time.Millisecond,
					Token:    asInt(res[4]),
				}}, nil
			}
		}
	}
	return claimReply{}, fmt.Errorf("lockkit: unexpected claim reply %v", res)
}

// complete runs complete.lua: the answer stored if token (with fence)
// still holds the claim; false when it does not.
func (p *primary) complete(ctx context.Context, n redisNames, token string, fence int64, payload []byte, retention time.Duration) (bool, error) {
	argv := []any{nil, nil, 1, n.keyArg, token, fence, payload, ms(retention), n.channelArg}
	v, err := p.script(ctx, completeScripts.on(p.sharded), n, argv, false).Int64()
	return err == nil && v == 1, err
}

// abandon runs abandon.lua: the claim of token released without an
// answer (the release of a claim's lease).
func (p *primary) abandon(ctx context.Context, n redisNames, token string) (bool, error) {
	argv := []any{nil, nil, 1, n.keyArg, token, n.channelArg, fenceKeepMs}
	v, err := p.eval(ctx, abandonScripts.on(p.sharded), argv, false).Int64()
	return err == nil && v == 1, err
}
