package core

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// shardHub carries release notifications on a Redis Cluster's shard
// channels (SSUBSCRIBE), each in the slot of its lock: a release reaches
// the shard that owns the lock, not every node as classic pub/sub would.
//
// It keeps one pub/sub connection per node that serves a slot with waiters
// (not one per slot or per channel), ref-counted per channel like hub, with
// the same guarantees: every (re)confirmation pokes the waiter, which then
// attempts again, so a message lost while nothing listened (pub/sub is
// at-most-once) costs a retry, never a stranded waiter; and a channel
// nobody waits for any more is unsubscribed and forgotten.
//
// A shard channel is bound to its slot's node, which a cluster changes
// under us, and go-redis does not follow that for a PubSub: on a reconnect
// it re-sends every shard channel of the PubSub in one SSUBSCRIBE, which
// Redis refuses with CROSSSLOT once they span slots, and it never re-routes
// a channel whose slot moved. So this hub does its own routing:
//
//   - SSUBSCRIBE and SUNSUBSCRIBE go out in one command per slot (one
//     command cannot span slots);
//   - when Redis drops a channel because its slot moved (resharding, or a
//     failover that demoted the node: Redis 7 sends an unrequested
//     "sunsubscribe"), the channel is resolved to its slot's master again
//     and subscribed there, and its waiter is poked;
//   - when a connection breaks, or answers with an error (MOVED,
//     CLUSTERDOWN: an error reply does not say which command it answers),
//     the PubSub is dropped, never reused, and every channel it carried is
//     resolved and subscribed again, each waiter poked, as hub does after
//     a reconnect.
//
// After a slot moved, go-redis's slot map can lag for a moment. The hub
// then asks for a reload and retries with a growing pause: it does not
// subscribe again, for a few seconds, on the node that just dropped the
// channel (after a failover that node is a replica of the new master, and
// Redis lets replicas serve shard channels, so the channel would stay off
// the master and out of SPUBLISH's subscriber count); a stale entry naming
// a node that does not serve the slot at all answers MOVED.
//
// One goroutine per connection reads it; one writer resolves slots and
// sends the batched commands, so a waiter never blocks on pub/sub I/O.
type shardHub struct {
	rdb *redis.ClusterClient

	mu    sync.Mutex
	subs  map[string]*shardSub  // by channel
	conns map[string]*shardConn // by node address
	// failures counts breaks, moved channels and failed resolutions since
	// the last confirmation; the writer pauses for longer with each, so a
	// dead node or a lagging slot map is not retried in a busy loop.
	failures int
	started  bool
	closed   bool

	kick   chan struct{} // to the writer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// shardSub is one channel's state; its fields are guarded by shardHub.mu.
type shardSub struct {
	h       *shardHub
	channel string
	slot    int
	waiters // sent: the last command was SSUBSCRIBE
	// conn is the connection the channel's last SSUBSCRIBE or SUNSUBSCRIBE
	// went to (nil: none, or that connection is gone). pendingUnsub:
	// SUNSUBSCRIBEs on conn not yet answered; an "ssubscribe" reply seen
	// before them belongs to an older SSUBSCRIBE.
	conn         *shardConn
	pendingUnsub int
	// movedFrom is the node that dropped the channel because its slot moved
	// away, until movedUntil: a slot map naming that node again is stale.
	movedFrom  string
	movedUntil time.Time
}

// shardConn is one node's pub/sub connection. A PubSub is used for one
// connection only: once it broke it is closed, never reconnected.
type shardConn struct {
	addr   string
	ps     *redis.PubSub
	ctx    context.Context // ends when the connection is dropped
	cancel context.CancelFunc
	dead   bool // guarded by shardHub.mu
}

// movedStale is how long a slot map naming the node that just dropped a
// channel is taken for stale: long enough for go-redis to reload it after
// a failover or a slot move, short enough that a slot moving back is
// followed.
const movedStale = 5 * time.Second

func newShardHub(rdb *redis.ClusterClient) *shardHub {
	ctx, cancel := context.WithCancel(context.Background())
	return &shardHub{rdb: rdb, subs: map[string]*shardSub{}, conns: map[string]*shardConn{}, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// subscribe takes a reference on channel; the first one subscribes. wake is
// poked on each release message and each (re)confirmation.
func (h *shardHub) subscribe(channel string, wake chan struct{}, id string) (waitSub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if !h.started {
		h.started = true
		h.wg.Add(1)
		go h.writer()
	}
	s := h.subs[channel]
	if s == nil {
		s = &shardSub{h: h, channel: channel, slot: keySlot(channel)}
		h.subs[channel] = s
	}
	if s.add(wake, id) {
		h.kickWriter()
	}
	return listener{s.unsubscribe, wake}, nil
}

func (s *shardSub) unsubscribe(wake chan struct{}) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.drop(wake) {
		h.kickWriter()
	}
}

func (h *shardHub) kickWriter() { poke(h.kick) }

// subscriptions is the number of channels the hub knows (Client.Stats).
func (h *shardHub) subscriptions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// pause is how long the writer waits before its next round, after failures.
func (h *shardHub) pause() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		return 0
	}
	return min(25*time.Millisecond<<min(h.failures-1, 6), time.Second)
}

func (h *shardHub) writer() {
	defer h.wg.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.kick:
		}
		if d := h.pause(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-h.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		h.sync()
	}
}

// batchKey groups channels into one command: one connection, one slot.
type batchKey struct {
	conn *shardConn
	slot int
}

// sync brings the server side in line with the references: it subscribes
// the channels somebody waits for (resolving the node of those that have
// none), unsubscribes the others, forgets what is settled, and closes the
// connections no channel uses any more.
func (h *shardHub) sync() {
	sub := map[batchKey][]string{}
	unsub := map[batchKey][]string{}
	resolve := map[int][]string{} // slot → channels
	h.mu.Lock()
	for ch, s := range h.subs {
		switch {
		case s.refs > 0 && !s.sent && s.conn != nil:
			s.sent = true
			k := batchKey{s.conn, s.slot}
			sub[k] = append(sub[k], ch)
		case s.refs > 0 && !s.sent:
			resolve[s.slot] = append(resolve[s.slot], ch)
		case s.refs == 0 && s.sent:
			s.sent, s.isConfirmed = false, false
			s.pendingUnsub++
			k := batchKey{s.conn, s.slot}
			unsub[k] = append(unsub[k], ch)
		case s.refs == 0 && (s.conn == nil || s.pendingUnsub == 0):
			delete(h.subs, ch)
		}
	}
	h.mu.Unlock()

	for slot, chans := range resolve {
		c := h.nodeConn(chans[0])
		if c == nil {
			continue // counted as a failure; the writer comes back after a pause
		}
		h.mu.Lock()
		var send []string
		stale := false
		now := time.Now()
		for _, ch := range chans {
			// Re-check: the reference may be gone, or another round sent it.
			s := h.subs[ch]
			switch {
			case s == nil || s.refs == 0 || s.sent || s.conn != nil || c.dead:
			case s.movedFrom == c.addr && now.Before(s.movedUntil):
				stale = true
			default:
				s.conn, s.sent, s.pendingUnsub = c, true, 0
				send = append(send, ch)
			}
		}
		if stale {
			h.failures++
			h.kickWriter()
		}
		h.mu.Unlock()
		if stale {
			h.rdb.ReloadState(h.ctx)
		}
		if len(send) > 0 {
			k := batchKey{c, slot}
			sub[k] = append(sub[k], send...)
		}
	}

	for k, chans := range sub {
		ctx, cancel := context.WithTimeout(k.conn.ctx, 5*time.Second)
		if err := k.conn.ps.SSubscribe(ctx, chans...); err != nil {
			h.broken(k.conn)
		}
		cancel()
	}
	for k, chans := range unsub {
		ctx, cancel := context.WithTimeout(k.conn.ctx, 5*time.Second)
		if err := k.conn.ps.SUnsubscribe(ctx, chans...); err != nil {
			h.broken(k.conn)
		}
		cancel()
	}
	h.closeIdle()
}

// nodeConn returns the connection to the master of channel's slot, made
// on first use; nil when the slot's node cannot be resolved now (or the
// hub is closed).
func (h *shardHub) nodeConn(channel string) *shardConn {
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	node, err := h.rdb.MasterForKey(ctx, channel)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if h.ctx.Err() == nil {
			h.failures++
			h.kickWriter()
		}
		return nil
	}
	if h.closed {
		return nil
	}
	addr := node.Options().Addr
	if c := h.conns[addr]; c != nil {
		return c
	}
	cctx, ccancel := context.WithCancel(h.ctx)
	c := &shardConn{addr: addr, ps: node.SSubscribe(cctx), ctx: cctx, cancel: ccancel} // no channels: no I/O here
	h.conns[addr] = c
	h.wg.Add(1)
	go h.reader(c)
	return c
}

// closeIdle drops the connections no channel refers to any more.
func (h *shardHub) closeIdle() {
	h.mu.Lock()
	used := make(map[*shardConn]bool, len(h.conns))
	for _, s := range h.subs {
		if s.conn != nil {
			used[s.conn] = true
		}
	}
	var idle []*shardConn
	for addr, c := range h.conns {
		if !used[c] {
			c.dead = true
			delete(h.conns, addr)
			idle = append(idle, c)
		}
	}
	h.mu.Unlock()
	for _, c := range idle {
		c.cancel()
		_ = c.ps.Close()
	}
}

func (h *shardHub) reader(c *shardConn) {
	defer h.wg.Done()
	pinged := false
	for {
		msg, err := c.ps.ReceiveTimeout(c.ctx, pubsubHealth)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) && !pinged {
				ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
				_ = c.ps.Ping(ctx)
				cancel()
				pinged = true
				continue
			}
			// Silent after a ping, broken, or an error reply: start this
			// node over on a new connection.
			h.broken(c)
			return
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "ssubscribe":
				h.confirm(c, m.Channel)
			case "sunsubscribe":
				h.unsubscribed(c, m.Channel)
			}
		}
	}
}

func (h *shardHub) deliver(channel, payload string) {
	h.mu.Lock()
	if s := h.subs[channel]; s != nil && s.refs > 0 {
		s.deliver(payload)
	}
	h.mu.Unlock()
}

func (h *shardHub) confirm(c *shardConn, channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[channel]
	if s == nil || s.conn != c || !s.sent || s.pendingUnsub > 0 {
		return
	}
	s.isConfirmed = true
	s.movedFrom = ""
	h.failures = 0
	s.poke() // a (re)confirmation: messages may have been lost before it, retry
}

// unsubscribed handles a "sunsubscribe": the answer to our SUNSUBSCRIBE, or,
// when none is pending, Redis dropping the channel because its slot moved
// to another node. Then the channel is resolved and subscribed again, and
// its waiter retries, since a release may have been announced meanwhile.
func (h *shardHub) unsubscribed(c *shardConn, channel string) {
	h.mu.Lock()
	s := h.subs[channel]
	if s == nil || s.conn != c {
		h.mu.Unlock()
		return
	}
	if s.pendingUnsub > 0 {
		s.pendingUnsub--
		if s.refs == 0 && !s.sent && s.pendingUnsub == 0 {
			delete(h.subs, channel)
		}
		h.mu.Unlock()
		return
	}
	s.conn, s.sent, s.isConfirmed = nil, false, false
	s.movedFrom, s.movedUntil = c.addr, time.Now().Add(movedStale)
	if s.refs == 0 {
		delete(h.subs, channel)
	} else {
		s.poke()
	}
	h.failures++ // let go-redis reload its slot map before resolving again
	h.kickWriter()
	h.mu.Unlock()
	h.rdb.ReloadState(h.ctx)
}

// broken drops connection c: every channel it carried is resolved and
// subscribed again and its waiter poked (messages may have been lost);
// SUNSUBSCRIBEs written on it will never be answered, so channels only
// waiting for those answers are forgotten now.
func (h *shardHub) broken(c *shardConn) {
	h.mu.Lock()
	if c.dead {
		h.mu.Unlock()
		return
	}
	c.dead = true
	if h.conns[c.addr] == c {
		delete(h.conns, c.addr)
	}
	for ch, s := range h.subs {
		if s.conn != c {
			continue
		}
		s.conn, s.sent, s.pendingUnsub, s.isConfirmed = nil, false, 0, false
		if s.refs == 0 {
			delete(h.subs, ch)
			continue
		}
		s.poke()
	}
	closed := h.closed
	if !closed {
		h.failures++
		h.kickWriter()
	}
	h.mu.Unlock()
	c.cancel()
	_ = c.ps.Close()
	if !closed {
		h.rdb.ReloadState(h.ctx) // the node may have failed over
	}
}

func (h *shardHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	conns := make([]*shardConn, 0, len(h.conns))
	for _, c := range h.conns {
		c.dead = true
		conns = append(conns, c)
	}
	clear(h.conns)
	h.mu.Unlock()
	h.cancel()
	for _, c := range conns {
		_ = c.ps.Close()
	}
	h.wg.Wait()
}

// keySlot is the Redis Cluster hash slot of a key or shard channel: CRC16
// (XMODEM) of the key, or of its first non-empty {hash tag}, modulo 16384.
// The hub groups SSUBSCRIBE per slot with it, without a round trip.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
