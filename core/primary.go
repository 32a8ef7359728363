package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// primary is the backend on one Redis primary: a standalone server, a
// sentinel-managed master (failover client) or a Redis Cluster (every lock is
// one key, so each script runs on the key's master).
type primary struct {
	rdb redis.UniversalClient
	// Exactly one of hub (classic pub/sub) and shard (a cluster's shard
	// channels) carries the release notifications.
	hub   *hub
	shard *shardHub
	// sharded: releases are announced with SPUBLISH on shard channels (the
	// announcer scripts' sharded variants), not PUBLISH.
	sharded bool
	ack     replicaAck
	batch   *batcher
}

// bound limits a batch of calls of which one has no deadline (the
// Client's release timeout; see batcher).
func newPrimary(rdb redis.UniversalClient, ack replicaAck, bound time.Duration) *primary {
	return &primary{rdb: rdb, hub: newHub(rdb), ack: ack, batch: newBatcher(rdb, maxDirect, bound)}
}

// newShardedPrimary is the backend on a Redis Cluster with release
// notifications on shard channels: SPUBLISH delivers a release to the shard
// that owns the lock only, where classic PUBLISH is broadcast to every node.
func newShardedPrimary(rdb *redis.ClusterClient, bound time.Duration) *primary {
	return &primary{rdb: rdb, shard: newShardHub(rdb), sharded: true, batch: newBatcher(rdb, maxDirect, bound)}
}

// waitCmd queues WAIT (Pipeliner has no typed Wait).
func (p *primary) waitCmd(ctx context.Context, pipe redis.Pipeliner) *redis.Cmd {
	return pipe.Do(ctx, "wait", p.ack.replicas, p.ack.timeout.Milliseconds())
}

// acked is the verdict of a WAIT sent after writes: nil when enough
// replicas acknowledged them.
func (p *primary) acked(wait *redis.Cmd) error {
	n, err := wait.Int64()
	if err != nil {
		return err
	}
	if int(n) < p.ack.replicas {
		return fmt.Errorf("%w: %d of %d within %v", ErrReplicaAck, n, p.ack.replicas, p.ack.timeout)
	}
	return nil
}

// run runs one script; with WithReplicaAck it sends WAIT in the same
// pipeline (so on the same connection, which is what WAIT counts) and fails
// when fewer replicas acknowledged.
func (p *primary) run(ctx context.Context, s *script, keys []string, args ...any) *redis.Cmd {
	if p.ack.replicas == 0 {
		return s.Run(ctx, p.rdb, keys, args...)
	}
	cmds, ackErr := p.pipelined(ctx, 1, func(int) scriptCall { return scriptCall{s, keys, args} })
	if cmds[0].Err() == nil && ackErr != nil {
		cmds[0].SetErr(ackErr)
	}
	return cmds[0]
}

// eval runs script s in one round trip: EVALSHA, then EVAL if the server
// lost the script (NOSCRIPT). argv is the whole command after its first two
// slots (filled here): numkeys, the key, the script's arguments. Building
// it directly, rather than through redis.Script.Run, saves the copies and
// boxing go-redis would add on the path every request takes. leave is
// batcher.process's.
func (p *primary) eval(ctx context.Context, s *script, argv []any, leave bool) *redis.Cmd {
	argv[0], argv[1] = "evalsha", s.sha
	cmd := p.batch.process(ctx, redis.NewCmd(ctx, argv...), leave)
	if isNoScript(cmd.Err()) {
		argv = append([]any(nil), argv...) // the first Cmd may still be read
		argv[0], argv[1] = "eval", s.src
		cmd = p.batch.process(ctx, redis.NewCmd(ctx, argv...), leave)
	}
	return cmd
}

// fenceKeepMs is fenceKeep as a script argument, boxed once.
var fenceKeepMs any = ms(fenceKeep)

// msArg is d in milliseconds as a script argument; the common TTLs are
// boxed once (an int64 above 255 costs an allocation each time).
func msArg(d time.Duration) any {
	switch d {
	case DefaultTTL:
		return defaultTTLMs
	}
	return ms(d)
}

var defaultTTLMs any = ms(DefaultTTL)

func ms(d time.Duration) int64 {
	m := d.Milliseconds()
	if m < 1 {
		m = 1
	}
	return m
}

func (p *primary) acquire(ctx context.Context, n redisNames, r acquireReq) (acquireReply, error) {
	life, grant := queueArgs(r.ttl)
	if n.kind != kindMutex {
		return p.acquireShared(ctx, n, r, life, grant)
	}
	// The whole EVALSHA (its first two slots filled by eval), ending with
	// acquire.lua's arguments: the last three only for a caller that
	// queues, life and grant only for one with a place in the wait queue
	// (see acquire.lua: each costs Redis).
	argv := []any{nil, nil, 1, n.keyArg, r.token, msArg(r.ttl), r.ownerArg(), r.meta, r.queue, life, grant}
	switch r.queue {
	case "":
		argv = argv[:8]
	case notifyOnly:
		argv = argv[:9]
	}
	v, err := p.script(ctx, acquireScript, n, argv, r.leave).Result()
	if err != nil {
		return acquireReply{}, err
	}
	return parseAcquire(v)
}

// script runs s on n's key with argv (as eval takes it): through the
// batcher (eval; leave as batcher.process takes it), or, under replica
// acknowledgement, pipelined with its WAIT (run).
func (p *primary) script(ctx context.Context, s *script, n redisNames, argv []any, leave bool) *redis.Cmd {
	if p.ack.replicas == 0 {
		return p.eval(ctx, s, argv, leave)
	}
	return p.run(ctx, s, []string{n.key}, argv[4:]...)
}

// acquireShared runs shared_acquire.lua: one attempt on a semaphore or a
// side of a read/write lock, sent as the mutex's attempt is (in the
// batcher's pipelines, or with WAIT under replica acknowledgement).
func (p *primary) acquireShared(ctx context.Context, n redisNames, r acquireReq, life, grant any) (acquireReply, error) {
	argv := []any{nil, nil, 1, n.keyArg, r.token, msArg(r.ttl), r.ownerArg(), r.meta, string(r.mode), r.limit, n.channelArg, r.queue, life, grant, "", nil}
	const first = 4 // argv[first:] are the script's arguments
	if r.place > 0 {
		argv[first+10] = r.place
	}
	switch {
	case r.queue == "":
		argv = argv[:first+8]
	case r.more:
		argv[first+11] = r.next
	default:
		argv = argv[:first+11]
	}
	res, err := p.script(ctx, sharedAcquireScripts.on(p.sharded), n, argv, r.leave).Slice()
	if err != nil {
		return acquireReply{}, err
	}
	switch {
	case len(res) >= 5 && asInt(res[0]) == 1 && asInt(res[1]) > 0:
		return acquireReply{ok: true, fence: asInt(res[1]), place: asInt(res[2]), requeued: asInt(res[3]) == 1, granted: asInt(res[4]) == 1}, nil
	case len(res) >= 6 && asInt(res[0]) == 0:
		why := asString(res[5])
		return acquireReply{promised: why == "p" || why == "q", holder: Holder{
			Owner:    asString(res[1]),
			Metadata: asString(res[2]),
			TTL:      time.Duration(asInt(res[3])) * time.Millisecond,
			Token:    asInt(res[4]),
		}}, nil
	}
	return acquireReply{}, fmt.Errorf("lockkit: unexpected acquire reply %v", res)
}

// parseAcquire reads acquire.lua's reply: the fence when acquired (a
// decimal string), the holder's description when not.
func parseAcquire(v any) (acquireReply, error) {
	switch x := v.(type) {
	case string:
		if fence, err := strconv.ParseInt(x, 10, 64); err == nil && fence > 0 {
			return acquireReply{ok: true, fence: fence}, nil
		}
		return acquireReply{}, fmt.Errorf("lockkit: unexpected acquire reply %q", x)
	case int64:
		if x > 0 {
			return acquireReply{ok: true, fence: x}, nil
		}
	}
	res, _ := v.([]any)
	if len(res) < 5 || asInt(res[0]) != 0 {
		return acquireReply{}, fmt.Errorf("lockkit: unexpected acquire reply %v", res)
	}
	return acquireReply{holder: Holder{
		Owner:    asString(res[1]),
		Metadata: asString(res[2]),
		TTL:      time.Duration(asInt(res[3])) * time.Millisecond,
		Token:    asInt(res[4]),
	}}, nil
}

func (p *primary) release(ctx context.Context, n redisNames, token string, keepExpiry bool) (bool, error) {
	if n.kind == kindRecord {
		return p.abandon(ctx, n, token)
	}
	if n.kind != kindMutex {
		ok, _, err := p.releaseShared(ctx, n, token, "")
		return ok, err
	}
	argv := []any{nil, nil, 1, n.keyArg, token, n.channelArg, fenceKeepMs}
	if keepExpiry {
		argv = argv[:6] // release.lua keeps the lease's expiry
	}
	v, err := p.eval(ctx, releaseScripts.on(p.sharded), argv, false).Int64()
	return err == nil && v >= 1, err
}

// releaseShared runs shared_release.lua for token (a lease's, or a queue
// id leaving the wait queue); queue is the releasing Client's queue id for
// the lock and side. elsewhere: what it freed went to other processes'
// queues only.
func (p *primary) releaseShared(ctx context.Context, n redisNames, token, queue string) (released, elsewhere bool, err error) {
	kind := "s"
	if n.kind == kindRW {
		kind = "rw"
	}
	argv := []any{nil, nil, 1, n.keyArg, token, n.channelArg, fenceKeepMs, kind, queue}
	v, err := p.script(ctx, sharedReleaseScripts.on(p.sharded), n, argv, false).Int64()
	return err == nil && v >= 1, v == 2, err
}

func (p *primary) handoff(ctx context.Context, n redisNames, from string, to acquireReq) (acquireReply, error) {
	return handoffReply(p.run(ctx, handoffScript, []string{n.key}, handoffArgs(from, to)...).Slice())
}

// handoffArgs are handoff.lua's arguments: from the owner token from to the
// waiter to.
func handoffArgs(from string, to acquireReq) []any {
	return []any{from, to.token, ms(to.ttl), to.owner, to.meta}
}

func handoffReply(res []any, err error) (acquireReply, error) {
	if err != nil {
		return acquireReply{}, err
	}
	if len(res) >= 2 && asInt(res[0]) == 1 {
		return acquireReply{ok: true, fence: asInt(res[1]), queued: len(res) >= 3 && asInt(res[2]) == 1}, nil
	}
	return acquireReply{}, nil
}

// handoffs runs the hand-offs gs of one lock, in their order, and records
// each one's reply in it (rep, err). One alone is one script; several go as
// one pipeline on one connection, so Redis runs them in order: each takes
// the lock from the token the one before gave it to.
func (p *primary) handoffs(ctx context.Context, n redisNames, gs []*grant) {
	if len(gs) == 1 {
		g := gs[0]
		g.rep, g.err = p.handoff(ctx, n, g.from, g.w.req)
		return
	}
	keys := []string{n.key}
	cmds, ackErr := p.pipelined(ctx, len(gs), func(i int) scriptCall {
		return scriptCall{handoffScript, keys, handoffArgs(gs[i].from, gs[i].w.req)}
	})
	for i, g := range gs {
		g.rep, g.err = handoffReply(cmds[i].Slice())
		if g.err == nil && ackErr != nil {
			g.rep, g.err = acquireReply{}, ackErr // confirmed by the primary only: unconfirmed
		}
	}
}

// scriptCall is one call of a script: what pipelined sends.
type scriptCall struct {
	s    *script
	keys []string
	args []any
}

// pipelined sends n script calls (call(i) is the i-th) as one pipeline, in
// order: with EVALSHA, then, in a second pipeline and still in order, the
// calls whose script the server lost (SCRIPT FLUSH, restart) with EVAL.
// With WithReplicaAck a WAIT ends each pipeline (on the same connection,
// which is what WAIT counts); ackErr is the last one's verdict.
func (p *primary) pipelined(ctx context.Context, n int, call func(i int) scriptCall) (cmds []*redis.Cmd, ackErr error) {
	cmds = make([]*redis.Cmd, n)
	var wait *redis.Cmd
	for pass := range 2 {
		pipe := p.rdb.Pipeline()
		sent := 0
		for i := range n {
			switch {
			case pass == 0:
				c := call(i)
				cmds[i] = c.s.EvalSha(ctx, pipe, c.keys, c.args...)
			case isNoScript(cmds[i].Err()):
				c := call(i)
				cmds[i] = c.s.Eval(ctx, pipe, c.keys, c.args...)
			default:
				continue
			}
			sent++
		}
		if sent == 0 {
			break
		}
		if p.ack.replicas > 0 {
			wait = p.waitCmd(ctx, pipe)
		}
		_, _ = pipe.Exec(ctx)
	}
	if wait != nil {
		ackErr = p.acked(wait)
	}
	return cmds, ackErr
}

func (p *primary) canHandoff() bool { return true }

func (p *primary) extend(ctx context.Context, n redisNames, token string, ttl time.Duration) (bool, error) {
	v, err := p.run(ctx, n.kind.extendScript(), []string{n.key}, token, ms(ttl)).Int64()
	return v == 1, err
}

// renew sends the whole batch as one pipeline of EVALSHA (the cluster client
// splits it per node); scripts the server lost are re-sent with EVAL.
func (p *primary) renew(ctx context.Context, batch []renewal) {
	cmds, ackErr := p.pipelined(ctx, len(batch), func(i int) scriptCall {
		b := &batch[i]
		return scriptCall{b.names.kind.extendScript(), []string{b.names.key}, []any{b.token, ms(b.ttl)}}
	})
	for i, c := range cmds {
		v, err := c.Int64()
		if err == nil && v == 1 && ackErr != nil {
			err = ackErr // confirmed by the primary only: unconfirmed
		}
		batch[i].ok, batch[i].err = v == 1, err
	}
}

func (p *primary) forceRelease(ctx context.Context, n redisNames) (bool, error) {
	v, err := forceScripts.on(p.sharded).Run(ctx, p.rdb, []string{n.key}, n.channel, fenceKeepMs).Int64()
	return v == 1, err
}

func (p *primary) inspect(ctx context.Context, n redisNames) (Holder, bool, error) {
	res, err := inspectScript.Run(ctx, p.rdb, []string{n.key}).Slice()
	if err != nil {
		return Holder{}, false, err
	}
	if len(res) >= 5 && asInt(res[0]) == 1 {
		return Holder{
			Owner:    asString(res[1]),
			Metadata: asString(res[2]),
			TTL:      time.Duration(asInt(res[3])) * time.Millisecond,
			Token:    asInt(res[4]),
		}, true, nil
	}
	if len(res) >= 2 {
		return Holder{Token: asInt(res[1])}, false, nil
	}
	return Holder{}, false, fmt.Errorf("lockkit: unexpected inspect reply %v", res)
}

func (p *primary) notifications() notifier {
	if p.shard != nil {
		return p.shard
	}
	return p.hub
}

// retryDelay: the holder's remaining TTL (its lock expires by then if it
// crashed, and a lost message is covered), plus a little.
func (p *primary) retryDelay(rep acquireReply) time.Duration {
	return max(rep.holder.TTL, 0) + 5*time.Millisecond
}

func (p *primary) jitter() time.Duration { return 0 }

// drift follows the Redlock paper: 1% of the TTL plus 2ms for timer and
// clock-rate differences between this process and the server.
func (p *primary) drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

func (p *primary) close() {
	p.notifications().close()
	p.batch.close()
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	case float64:
		return int64(x)
	}
	return 0
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case bool:
		return ""
	}
	return fmt.Sprint(v)
}

// isDialError reports an error that means the command never left this
// process (connection refused), so nothing can have been applied.
func isDialError(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "dial"
}
