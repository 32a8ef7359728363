package core

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub multiplexes the release channels of every lock a Client waits for over
// one pub/sub connection, ref-counted per channel.
//
// Two goroutines run while anything is subscribed: the reader (the only
// caller of Receive) and the writer (batches SUBSCRIBE / UNSUBSCRIBE so a
// waiter never blocks on pub/sub I/O). Pub/sub is at-most-once: a message
// sent while the connection is down is lost. So the reader tracks the
// server's confirmations, and every (re)confirmation wakes the channel's
// waiter, which then retries: after a reconnect all waiters retry.
type hub struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	ps      *redis.PubSub
	subs    map[string]*subscription
	gen     uint64 // bumped when the connection is replaced or broke
	started bool
	closed  bool

	kick   chan struct{} // to the writer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// waiters is what both hubs keep per channel about the local waiters of
// it; guarded by the hub's mutex.
type waiters struct {
	refs int
	// sent: the hub subscribed the channel (and did not unsubscribe since);
	// isConfirmed: the server confirmed it on the current connection.
	sent, isConfirmed bool
	// rcv are the local queues listening: one, or a read/write lock's two
	// sides, which share the lock's channel.
	rcv []receiver
}

// receiver is one local queue listening on a channel: its wake channel
// gets a value on each release message (a grant to another queue than
// id excepted: see grantedElsewhere) and each (re)confirmation; id is its
// queue's id in the lock's wait queue ("" when it has none).
type receiver struct {
	wake chan struct{}
	id   string
	refs int
}

// add takes a reference for a waiter. kick: the channel is not subscribed
// yet, the hub's writer must.
func (w *waiters) add(wake chan struct{}, id string) (kick bool) {
	i := slices.IndexFunc(w.rcv, func(r receiver) bool { return r.wake == wake })
	if i < 0 {
		i = len(w.rcv)
		w.rcv = append(w.rcv, receiver{wake: wake, id: id})
	}
	w.rcv[i].refs++
	w.refs++
	if w.isConfirmed && w.sent {
		// Still subscribed from an earlier waiter: a release may have been
		// announced before this wake channel was registered, so retry once.
		poke(wake)
	}
	return !w.sent
}

// drop gives wake's reference back; kick: the last one, the writer
// unsubscribes.
func (w *waiters) drop(wake chan struct{}) (kick bool) {
	if i := slices.IndexFunc(w.rcv, func(r receiver) bool { return r.wake == wake }); i >= 0 {
		if w.rcv[i].refs--; w.rcv[i].refs == 0 {
			w.rcv = slices.Delete(w.rcv, i, i+1)
		}
	}
	w.refs--
	return w.refs == 0
}

func (w *waiters) poke() {
	for _, r := range w.rcv {
		poke(r.wake)
	}
}

// deliver pokes the waiters for a release message (see grantedElsewhere).
func (w *waiters) deliver(payload string) {
	for _, r := range w.rcv {
		if !grantedElsewhere(payload, r.id) {
			poke(r.wake)
		}
	}
}

// listener is one local queue's reference on a channel (waitSub).
type listener struct {
	unsub func(wake chan struct{})
	wake  chan struct{}
}

func (l listener) unsubscribe() { l.unsub(l.wake) }

// subscription is one channel's state; its fields are guarded by hub.mu.
type subscription struct {
	h       *hub
	channel string
	waiters
	// pendingUnsub counts UNSUBSCRIBEs written on connection generation
	// unsubGen whose replies have not arrived; a "subscribe" reply seen
	// before them belongs to an older SUBSCRIBE and confirms nothing.
	pendingUnsub int
	unsubGen     uint64
}

func newHub(rdb redis.UniversalClient) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{rdb: rdb, subs: map[string]*subscription{}, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// subscribe takes a reference on channel; the first one subscribes. wake is
// poked on each release message (but a grant to another queue than id: see
// grantedElsewhere) and each (re)confirmation.
func (h *hub) subscribe(channel string, wake chan struct{}, id string) (waitSub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if !h.started {
		h.started = true
		h.ps = h.rdb.Subscribe(h.ctx) // no channels: no I/O here
		h.wg.Add(2)
		go h.reader()
		go h.writer()
	}
	s := h.subs[channel]
	if s == nil {
		s = &subscription{h: h, channel: channel}
		h.subs[channel] = s
	}
	if s.add(wake, id) {
		h.kickWriter()
	}
	return listener{s.unsubscribe, wake}, nil
}

func (s *subscription) unsubscribe(wake chan struct{}) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.drop(wake) {
		h.kickWriter()
	}
}

func (h *hub) kickWriter() { poke(h.kick) }

func (s *subscription) unconfirm() { s.isConfirmed = false }

func (h *hub) writer() {
	defer h.wg.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.kick:
		}
		h.mu.Lock()
		ps := h.ps
		var sub, unsub []string
		for ch, s := range h.subs {
			switch {
			case s.refs > 0 && !s.sent:
				s.sent = true
				sub = append(sub, ch)
			case s.refs == 0 && s.sent:
				s.sent = false
				s.unconfirm()
				if s.unsubGen != h.gen {
					s.pendingUnsub, s.unsubGen = 0, h.gen
				}
				s.pendingUnsub++
				unsub = append(unsub, ch)
			case s.refs == 0 && (s.pendingUnsub == 0 || s.unsubGen != h.gen):
				delete(h.subs, ch)
			}
		}
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		// Errors mean the connection broke; the reader sees it too, and
		// go-redis resubscribes every channel in the set on the new one.
		if len(sub) > 0 {
			_ = ps.Subscribe(ctx, sub...)
		}
		if len(unsub) > 0 {
			_ = ps.Unsubscribe(ctx, unsub...)
		}
		cancel()
	}
}

func (h *hub) reader() {
	defer h.wg.Done()
	var backoff time.Duration
	pinged := false
	for {
		h.mu.Lock()
		ps := h.ps
		h.mu.Unlock()
		msg, err := ps.ReceiveTimeout(h.ctx, pubsubHealth)
		if h.ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) {
				if pinged { // no answer to the last ping: the connection is dead
					h.replace()
					pinged = false
					continue
				}
				ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
				_ = ps.Ping(ctx)
				cancel()
				pinged = true
				continue
			}
			h.reset()
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff, pinged = 0, false
		switch m := msg.(type) {
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe":
				h.confirm(m.Channel)
			case "unsubscribe":
				h.unsubscribed(m.Channel)
			}
		}
	}
}

// grantedElsewhere reports a release message that granted the lock to
// another process's queue (payload "g:<queue id>", release.lua): only the
// grantee needs to wake; the other heads keep their places, refreshed by
// their periodic attempts. A plain release ("released") wakes every head.
func grantedElsewhere(payload, id string) bool {
	// A subscriber without a queue id is in no wait queue (Redlock): every
	// release may concern it.
	return id != "" && len(payload) > 2 && payload[:2] == "g:" && payload[2:] != id
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (h *hub) deliver(channel, payload string) {
	h.mu.Lock()
	if s := h.subs[channel]; s != nil {
		s.deliver(payload)
	}
	h.mu.Unlock()
}

func (h *hub) confirm(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[channel]
	if s == nil || !s.sent || (s.pendingUnsub > 0 && s.unsubGen == h.gen) {
		return
	}
	s.isConfirmed = true
	s.poke() // a re-confirmation after a reconnect: messages may be lost, retry
}

func (h *hub) unsubscribed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[channel]
	if s == nil || s.unsubGen != h.gen || s.pendingUnsub == 0 {
		return
	}
	s.pendingUnsub--
	if s.refs == 0 && !s.sent && s.pendingUnsub == 0 {
		delete(h.subs, channel)
	}
}

// reset: the connection broke. go-redis reconnects and resubscribes every
// channel; until the server confirms again, nothing is confirmed, and every
// waiter is woken so it retries rather than trusting a lost message.
// UNSUBSCRIBEs written on the broken connection will never be answered: the
// writer drops the entries that waited for those replies now, rather than
// whenever some other lock next subscribes or unsubscribes.
func (h *hub) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	for _, s := range h.subs {
		s.unconfirm()
		s.poke()
	}
	h.kickWriter()
}

// replace swaps a silent connection (no answer to PING) for a new PubSub and
// lets the writer subscribe everything again.
func (h *hub) replace() {
	h.mu.Lock()
	old := h.ps
	h.ps = h.rdb.Subscribe(h.ctx)
	h.gen++
	for _, s := range h.subs {
		s.sent = false
		s.unconfirm()
		s.poke()
	}
	h.kickWriter()
	h.mu.Unlock()
	_ = old.Close()
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	ps := h.ps
	h.mu.Unlock()
	h.cancel()
	if ps != nil {
		_ = ps.Close()
	}
	h.wg.Wait()
}
