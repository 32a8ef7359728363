// Package tcpproxy is a small TCP proxy on loopback for fault-injection
// tests: it sits between a client and a server (a redis-server, say) and can
// delay bytes in either direction, discard the server's replies while still
// forwarding the client's commands (so the server applies a command whose
// reply is lost), freeze all traffic, cut every connection and switch the
// target (a failover behind a fixed address).
//
// Every knob applies to bytes read after it was set; bytes keep their order
// in each direction. The proxy never dials anything but its target.
package tcpproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction of a byte stream through the proxy.
type Direction int

const (
	// Upstream is client → server (commands).
	Upstream Direction = iota
	// Downstream is server → client (replies).
	Downstream
)

func (d Direction) String() string {
	if d == Upstream {
		return "upstream"
	}
	return "downstream"
}

// Proxy forwards every connection accepted on Addr to its target.
type Proxy struct {
	ln net.Listener

	mu      sync.Mutex
	target  string
	latency [2]time.Duration
	drop    bool
	paused  chan struct{} // non-nil while paused; closed by Resume
	conns   map[*pair]struct{}
	closed  bool
	dialTO  time.Duration
	stopped chan struct{}

	wg sync.WaitGroup

	accepted atomic.Int64
	bytes    [2]atomic.Int64 // forwarded per direction
	dropped  atomic.Int64
}

// Stats counts what went through the proxy.
type Stats struct {
	Accepted   int64 // connections accepted
	Open       int   // connections open now
	Upstream   int64 // bytes read from clients (forwarded, possibly still delayed)
	Downstream int64 // bytes read from servers and forwarded (possibly still delayed)
	Dropped    int64 // server bytes discarded by DropReplies
}

// New listens on a free loopback port and forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}, dialTO: 2 * time.Second, stopped: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port; point clients at it.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// SetTarget changes where new connections go; open ones stay where they are
// (CutAll them to move every client, as a failover would).
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// SetLatency delays every chunk read from now on in direction dir by d
// before it is written to the other side (0: no delay).
func (p *Proxy) SetLatency(dir Direction, d time.Duration) {
	p.mu.Lock()
	p.latency[dir] = d
	p.mu.Unlock()
}

// DropReplies, while on, discards the bytes servers send to clients; the
// client's bytes still reach the server, so a command is applied and its
// reply is lost.
func (p *Proxy) DropReplies(on bool) {
	p.mu.Lock()
	p.drop = on
	p.mu.Unlock()
}

// Pause stops forwarding in both directions; connections stay open and new
// ones are accepted, but no byte moves until Resume (a hung network).
func (p *Proxy) Pause() {
	p.mu.Lock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
	p.mu.Unlock()
}

// Resume lets bytes flow again after Pause.
func (p *Proxy) Resume() {
	p.mu.Lock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	p.mu.Unlock()
}

// CutAll closes every open connection on both sides (the client sees a
// reset or EOF) and reports how many there were. New connections are
// accepted as before.
func (p *Proxy) CutAll() int {
	p.mu.Lock()
	var ps []*pair
	for c := range p.conns {
		ps = append(ps, c)
	}
	p.mu.Unlock()
	for _, c := range ps {
		c.close()
	}
	return len(ps)
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Accepted:   p.accepted.Load(),
		Open:       open,
		Upstream:   p.bytes[Upstream].Load(),
		Downstream: p.bytes[Downstream].Load(),
		Dropped:    p.dropped.Load(),
	}
}

// Close stops listening, cuts every connection and waits for all of the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stopped)
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		target := p.target
		pr := &pair{p: p, client: c, done: make(chan struct{})}
		p.conns[pr] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go pr.run(target)
	}
}

// knobs returns the latency and drop setting for a chunk read now.
func (p *Proxy) knobs(dir Direction) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency[dir], dir == Downstream && p.drop
}

// gate returns a channel that is closed once bytes may flow (nil: now).
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// pair is one proxied connection: the client's and the server's side.
type pair struct {
	p              *Proxy
	client, server net.Conn
	mu             sync.Mutex
	done           chan struct{}
	once           sync.Once
}

func (c *pair) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.client.Close()
		c.mu.Lock()
		if c.server != nil {
			_ = c.server.Close()
		}
		c.mu.Unlock()
	})
}

func (c *pair) run(target string) {
	defer c.p.wg.Done()
	defer func() {
		c.close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	}()
	d := net.Dialer{Timeout: c.p.dialTO}
	srv, err := d.Dial("tcp", target)
	if err != nil {
		return // the client sees its connection closed, as with a refused dial
	}
	c.mu.Lock()
	c.server = srv
	c.mu.Unlock()
	select {
	case <-c.done: // cut while dialing
		_ = srv.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.pipe(c.client, srv, Upstream) }()
	go func() { defer wg.Done(); c.pipe(srv, c.client, Downstream) }()
	wg.Wait()
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst through a delay queue: a reader stamps each chunk
// with its due time and a writer sends it then (and only while not paused),
// so latency adds to every byte without limiting throughput. When either
// side ends, the whole pair is closed.
func (c *pair) pipe(src, dst net.Conn, dir Direction) {
	q := make(chan chunk, 64)
	rdone := make(chan struct{})
	defer func() {
		c.close() // unblocks the reader
		<-rdone
	}()
	go func() {
		defer close(rdone)
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				lat, drop := c.p.knobs(dir)
				if drop {
					c.p.dropped.Add(int64(n))
				} else {
					c.p.bytes[dir].Add(int64(n))
					ch := chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(lat)}
					select {
					case q <- ch:
					case <-c.done:
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ch := range q {
		if wait := time.Until(ch.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.done:
				return
			}
		}
		for g := c.p.gate(); g != nil; g = c.p.gate() {
			select {
			case <-g:
			case <-c.done:
				return
			case <-c.p.stopped:
				return
			}
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}
