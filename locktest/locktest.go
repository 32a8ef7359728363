package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/core"
)

const (
	// DefaultTTL is the default lease TTL of the Client. It is short so that
	// LoseLease returns quickly (the engine notices a loss at its next
	// renewal, every TTL/3), and long enough that a test machine busy with
	// the race detector does not lose leases by late renewals: a renewal
	// has two thirds of the TTL to be confirmed.
	DefaultTTL = time.Second

	// Owner is the owner id of the Client (core.WithOwner), so errors and
	// core.Holder values read the same on every machine.
	Owner = "locktest"

	// OtherOwner is the owner id of the holder HoldByAnother stands for: a
	// *core.NotAcquiredError met because of it names this owner.
	OtherOwner = "locktest-other"
)

// unavailableMsg is the error reply of every command while SetUnavailable
// is on. It is not one of the replies go-redis or the engine treat
// specially (NOSCRIPT, MOVED, LOADING...), so it reads as what it is: a
// Redis that answers every command with an error.
const unavailableMsg = "LOCKTEST redis made unavailable by locktest.Server.SetUnavailable"

// otherTTL is the TTL of the lock HoldByAnother takes. Its lease is not
// renewed (core.NoRenew), so it cannot be lost while the test makes Redis
// unavailable; miniredis's clock does not move, so it stays until released.
const otherTTL = time.Hour

// lossSlack is how long past the lease's TTL LoseLease waits for the
// engine to report the loss before giving up: the engine ends a lease by
// its local deadline at the latest, TTL after its last confirmation.
const lossSlack = 2 * time.Second

// Option configures a Server.
type Option func(*config)

type config struct {
	ttl        time.Duration
	observer   core.Observer
	clientOpts []core.Option
}

// WithTTL sets the Client's default lease TTL (DefaultTTL). A shorter one
// makes LoseLease faster and a lease more fragile on a loaded machine; at
// least core.MinTTL.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithObserver gives the Client an Observer (otellock.New(...), or a
// recorder of the test's own). Pass it here rather than as
// core.WithObserver in WithClientOptions: locktest watches the Client's
// events to learn when a lease LoseLease removed is lost, and forwards
// every event to this Observer.
func WithObserver(o core.Observer) Option { return func(c *config) { c.observer = o } }

// WithClientOptions adds core options to the Client (and to the Client
// that stands for the other owner, so that a prefix, say, is shared),
// applied after locktest's own: WithOwner and WithTTL given here win.
// core.WithObserver given here is replaced: use WithObserver.
func WithClientOptions(opts ...core.Option) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// Server is an embedded Redis with a lock Client on it. Its methods are
// safe for concurrent use: a handler may call LoseLease while the test
// goroutine waits for its answer.
type Server struct {
	mr     *miniredis.Miniredis
	rdb    *redis.Client
	client *core.Client
	other  *core.Client // the other owner of HoldByAnother
	watch  *watcher

	closeOnce sync.Once
	closeErr  error
}

// New starts a Server for the test t and closes it at t's cleanup; it
// fails t at once when the Server cannot start. Close Clients you make on
// Redis() before then: register their cleanup after calling New.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Start(opts...)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("locktest: close: %v", err)
		}
	})
	return s
}

// Start starts a Server that lives until Close, for code that has no
// *testing.T (an Example function); tests use New.
func Start(opts ...Option) (*Server, error) {
	cfg := config{ttl: DefaultTTL}
	for _, o := range opts {
		o(&cfg)
	}
	if err := core.CheckTTL(cfg.ttl); err != nil {
		return nil, fmt.Errorf("locktest: %w", err)
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start miniredis: %w", err)
	}
	s := &Server{mr: mr, rdb: redis.NewClient(redisOptions(mr.Addr()))}
	next := cfg.observer
	if next == nil {
		next = core.NopObserver{}
	}
	s.watch = &watcher{Observer: next, waiting: map[string][]chan error{}}

	base := append([]core.Option{core.WithTTL(cfg.ttl), core.WithOwner(Owner)}, cfg.clientOpts...)
	var err error
	s.client, err = core.New(s.rdb, append(base, core.WithObserver(s.watch))...)
	if err == nil {
		s.other, err = core.New(s.rdb, append(base, core.WithOwner(OtherOwner), core.WithObserver(nil))...)
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// redisOptions are the go-redis options core requires and lockkit
// recommends: ContextTimeoutEnabled (core.New refuses a client without
// it), no hidden re-sends (MaxRetries -1), one dial attempt, and I/O
// bounded in seconds so that a test never hangs on the embedded server.
func redisOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           3 * time.Second,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
	}
}

// Client is the lock Client under test: give it to the adapter or the code
// under test. Its owner is Owner, its default TTL DefaultTTL (WithTTL).
func (s *Server) Client() *core.Client { return s.client }

// Redis is the go-redis client of the embedded server, with the options
// core requires: for core.NewRedlock over several Servers, or for a second
// core.Client standing for another replica (close it before the Server).
// LoseLease knows only the leases of Client().
func (s *Server) Redis() *redis.Client { return s.rdb }

// Addr is the embedded server's address (127.0.0.1:port), to connect a
// go-redis client of your own options to it, as a service would to its
// Redis. core.New requires such a client to set ContextTimeoutEnabled.
func (s *Server) Addr() string { return s.mr.Addr() }

// HoldByAnother makes another owner (OtherOwner, a Client of its own on the
// same Redis) hold the lock on key until the returned lease is released,
// or the Server closes. Meanwhile an acquire of key by the Client fails
// with core.ErrNotAcquired: at once with core.NoWait or TryAcquire, at the
// end of its wait budget otherwise (give a route under test NoWait or a
// short Wait). Releasing the lease wakes the Client's waiters, as a real
// release does.
//
// The other owner's lease is not renewed and cannot be lost while the
// test makes Redis unavailable. HoldByAnother fails with
// core.ErrNotAcquired when key is already held.
func (s *Server) HoldByAnother(ctx context.Context, key string) (*core.Lease, error) {
	return s.other.TryAcquire(ctx, key, core.TTL(otherTTL), core.NoRenew())
}

// SetUnavailable makes every Redis command fail with an error reply (on),
// or answer again (off). While it is on, acquires fail at once with
// core.ErrUnavailable (a fail-closed adapter answers 503 or
// codes.Unavailable; a FailOpen one runs the handler unlocked), releases
// fail with core.ErrUnavailable (the lock then stays in Redis), and held
// leases are not renewed: each is lost at its local deadline, within a TTL,
// as when a real Redis is down.
func (s *Server) SetUnavailable(on bool) {
	if on {
		s.mr.SetError(unavailableMsg)
	} else {
		s.mr.SetError("")
	}
}

// LoseLease makes the Client's lease on key lost now, as when a renewal
// finds another owner: it removes the lock from Redis and returns once the
// engine has noticed, at the lease's next renewal (within a third of its
// TTL). By then the lease's context, and every context bound to it (the
// handler's, under an adapter), is cancelled with context.Cause
// core.ErrLost, and the lock is free for the next acquire.
//
// It may be called from any goroutine, the handler's own included, and ctx
// may be the handler's context: its end by this very loss is waited out.
// It fails when no lease of the Client holds key (core.ErrNotHeld), when
// the lease is released before the engine noticed (core.ErrNotHeld), and
// when ctx ends first.
func (s *Server) LoseLease(ctx context.Context, key string) error {
	h, held, err := s.client.Inspect(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("locktest: lose lease %q: %w", key, err)
	case !held:
		return fmt.Errorf("locktest: lose lease %q: %w (no lease holds it)", key, core.ErrNotHeld)
	case h.Owner != s.client.Owner():
		return fmt.Errorf("locktest: lose lease %q: %w (held by %s, not by the Client)", key, core.ErrNotHeld, h.Owner)
	}
	lost, cancel := s.watch.await(key)
	defer cancel()
	if removed, err := s.client.ForceRelease(ctx, key); err != nil {
		return fmt.Errorf("locktest: lose lease %q: %w", key, err)
	} else if !removed {
		return fmt.Errorf("locktest: lose lease %q: %w (released meanwhile)", key, core.ErrNotHeld)
	}
	limit := time.NewTimer(h.TTL + lossSlack)
	defer limit.Stop()
	done := ctx.Done()
	for {
		select {
		case err := <-lost:
			if err != nil {
				return fmt.Errorf("locktest: lose lease %q: %w", key, err)
			}
			return nil
		case <-done:
			if errors.Is(context.Cause(ctx), core.ErrLost) {
				// ctx is bound to the very lease (LoseLease called from
				// the handler): the engine cancels it a moment before it
				// reports the loss. Wait for the report.
				done = nil
				continue
			}
			return fmt.Errorf("locktest: lose lease %q: %w", key, context.Cause(ctx))
		case <-limit.C:
			return fmt.Errorf("locktest: lose lease %q: the engine did not report the loss within %v", key, h.TTL+lossSlack)
		}
	}
}

// Close closes the Client (releasing its leases), the other owner's
// Client, the go-redis client and the embedded server, in that order,
// after making Redis available again. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mr.SetError("")
		var errs []error
		for _, c := range []*core.Client{s.client, s.other} {
			if c != nil {
				errs = append(errs, c.Close())
			}
		}
		if err := s.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
		s.mr.Close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// watcher is the Client's Observer: it forwards every event to the
// configured Observer and tells LoseLease when the lease it removed ended.
type watcher struct {
	core.Observer // the test's Observer, or core.NopObserver

	mu      sync.Mutex
	waiting map[string][]chan error // by lock key: nil on loss, the reason otherwise
}

// await registers interest in the end of key's lease; cancel unregisters.
func (w *watcher) await(key string) (<-chan error, func()) {
	ch := make(chan error, 1)
	w.mu.Lock()
	w.waiting[key] = append(w.waiting[key], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		chs := w.waiting[key]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(w.waiting, key)
		} else {
			w.waiting[key] = chs
		}
	}
}

// notify hands err to everyone waiting on key; it never blocks (the engine
// calls Observers from its renewal goroutine).
func (w *watcher) notify(key string, err error) {
	w.mu.Lock()
	chs := w.waiting[key]
	delete(w.waiting, key)
	w.mu.Unlock()
	for _, ch := range chs {
		ch <- err // buffered, one send per registration
	}
}

func (w *watcher) Lost(ctx context.Context, l core.LeaseInfo, cause error) {
	w.Observer.Lost(ctx, l, cause)
	if errors.Is(cause, core.ErrLost) {
		w.notify(l.Key, nil)
	} else {
		w.notify(l.Key, cause)
	}
}

func (w *watcher) Released(ctx context.Context, l core.LeaseInfo, err error) {
	w.Observer.Released(ctx, l, err)
	w.notify(l.Key, fmt.Errorf("%w (released before the engine noticed the loss)", core.ErrNotHeld))
}
