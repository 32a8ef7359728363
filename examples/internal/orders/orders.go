// Package orders is the small service behind the examples: an in-memory
// order book standing in for a database, with the operations the example
// routes run under a lock. It knows nothing of any web framework, so the
// gin, echo and gRPC examples and the demo share it.
//
// Every write is a read-modify-write (read, think for Work, write): run
// concurrently without a lock, payments and refunds of one order lose each
// other's updates. The store is also fenced: each write carries the lock's
// fencing token and a write with a token older than the last one the order
// saw is refused (ErrStaleToken), so a holder that lost its lock (a long GC
// pause, a partition) cannot overwrite its successor's work. With
// Store.Fence the check is made where it belongs, by the resource: every
// write of an order is first a fenced write of its record to Redis
// (package fence), one call that refuses an older token atomically, and
// only then applied to the in-memory book.
//
// An order also has line items, imported a line at a time (Import) and
// exported a page at a time (ExportLines): the gRPC service streams them.
// An import is one change to the order made of many writes, so whoever
// runs one holds the order's lock from its first line to its last, and
// an export holds it from its first read to its last so that it reads
// one state of the order.
package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lockkit/lockkit/fence"
)

// Errors of the operations.
var (
	ErrStaleToken     = errors.New("orders: stale fencing token: a newer lock holder already wrote this order")
	ErrNotPaid        = errors.New("orders: nothing paid to refund or ship")
	ErrAlreadyShipped = errors.New("orders: already shipped")
	ErrBadAmount      = errors.New("orders: amount must be a positive number of cents")
	// ErrOverflow refuses a payment the balance cannot hold: an int64 of
	// cents would wrap around to a negative balance.
	ErrOverflow = errors.New("orders: amount too large: the balance would overflow")
	// ErrBadLine refuses a line item without a SKU, with a quantity below
	// 1 or with a negative unit price.
	ErrBadLine = errors.New("orders: a line needs a sku, a quantity > 0 and a unit price >= 0 cents")
)

// Order is one order's state.
type Order struct {
	ID       string `json:"id"`
	Balance  int64  `json:"balance_cents"`
	Payments int    `json:"payments"`
	Refunds  int    `json:"refunds"`
	// Transfers counts the transfers this order took part in, either way.
	Transfers int  `json:"transfers"`
	Shipped   bool `json:"shipped"`
	// Lines is how many line items were imported, Total their value:
	// the sum of quantity × unit price.
	Lines int   `json:"lines"`
	Total int64 `json:"total_cents"`
	// Token is the fencing token of the last write.
	Token int64 `json:"token"`
}

// Line is one line item of an order.
type Line struct {
	SKU       string `json:"sku"`
	Quantity  int64  `json:"quantity"`
	UnitCents int64  `json:"unit_cents"`
}

// cents is the line's value, or ErrBadLine or ErrOverflow.
func (l Line) cents() (int64, error) {
	switch {
	case l.SKU == "" || l.Quantity <= 0 || l.UnitCents < 0:
		return 0, fmt.Errorf("%w: sku %q, quantity %d, unit_cents %d", ErrBadLine, l.SKU, l.Quantity, l.UnitCents)
	case l.UnitCents > 0 && l.Quantity > math.MaxInt64/l.UnitCents:
		return 0, fmt.Errorf("%w: %d × %d cents", ErrOverflow, l.Quantity, l.UnitCents)
	}
	return l.Quantity * l.UnitCents, nil
}

// Export is the result of a tenant export.
type Export struct {
	Tenant string `json:"tenant"`
	Number int    `json:"number"` // how many exports this tenant has run
	Token  int64  `json:"token"`
}

// Settings are a tenant's settings: read by many requests at once, written
// by few (a read/write lock's case).
type Settings struct {
	Tenant  string `json:"tenant"`
	Plan    string `json:"plan"`
	Version int    `json:"version"` // how many times they were written
	Token   int64  `json:"token"`   // the fencing token of the last write
}

// Book is what the order routes run: *Store, or a wrapper around one (the
// demo wraps it with its witness). Every front end — gin, echo, gRPC —
// takes a Book, so all of them serve the same order book. (The gRPC
// service has no tenant export and the HTTP front ends no line items:
// Import and ExportLines are streams, which gRPC has.)
type Book interface {
	Get(id string) Order
	Pay(ctx context.Context, id string, token, cents int64) (Order, error)
	Refund(ctx context.Context, id string, token, cents int64) (Order, error)
	Ship(ctx context.Context, id string, token int64) (Order, error)
	Export(ctx context.Context, tenant string, token int64) (Export, error)
	Transfer(ctx context.Context, from, to string, fromToken, toToken, cents int64) (Order, Order, error)
	Settings(ctx context.Context, tenant string) (Settings, error)
	SetSettings(ctx context.Context, tenant, plan string, token int64) (Settings, error)
	Import(ctx context.Context, id string, token int64, lines iter.Seq2[Line, error]) (Order, int, error)
	ExportLines(ctx context.Context, id string, send func(Line) error) (int, error)
}

var _ Book = (*Store)(nil)

// Store is the order book. The zero value is not usable; use NewStore.
type Store struct {
	// Work is the time between the read and the write of each operation
	// (a slow database), which is when concurrent writers collide.
	Work time.Duration

	// fence, when set, is the resource side of fencing: each order's
	// record is written to Redis through it, refused for an older token;
	// records says under which names and for how long.
	fence   *fence.Redis
	records Records

	mu       sync.Mutex
	written  map[string]bool // the ids of the records a write was sent for
	orders   map[string]Order
	lines    map[string][]Line
	exports  map[string]Export
	settings map[string]Settings
}

// NewStore returns an empty store whose operations take work.
func NewStore(work time.Duration) *Store {
	return &Store{Work: work, written: map[string]bool{}, orders: map[string]Order{}, lines: map[string][]Line{}, exports: map[string]Export{}, settings: map[string]Settings{}}
}

// Records says where a fenced store keeps the orders' records: order id's
// is Prefix+id, and each expires TTL after its last write (0: never). On a
// Redis that is not the service's own (a demo on a user's Redis), a
// prefix of its own and an expiry keep the data findable and bounded.
type Records struct {
	Prefix string
	TTL    time.Duration
}

// Fence makes every order write a fenced write of the order's record (its
// JSON) to f first, named and expiring as rec says: a write whose token is
// older than the record's is refused there (ErrStaleToken, wrapping
// fence.ErrStale) before it touches the book. It returns s.
func (s *Store) Fence(f *fence.Redis, rec Records) *Store {
	s.fence, s.records = f, rec
	return s
}

// RecordKeys returns the name of every record the book sent a write for
// (nil when it is not fenced), refused or not: what a caller removes to
// leave no data behind.
func (s *Store) RecordKeys() []string {
	if s.fence == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.written))
	for id := range s.written {
		keys = append(keys, s.records.Prefix+id)
	}
	return keys
}

// IsFenced: the book writes through a fenced store (Fence).
func (s *Store) IsFenced() bool { return s.fence != nil }

// FencedToken is the token of the last write the fenced store accepted for
// order id (false: none, or no fenced store).
func (s *Store) FencedToken(ctx context.Context, id string) (int64, bool, error) {
	if s.fence == nil {
		return 0, false, nil
	}
	e, ok, err := s.fence.Get(ctx, s.records.Prefix+id)
	return e.Token, ok, err
}

// Get returns an order (the zero Order with the id when it does not exist).
func (s *Store) Get(id string) Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		o.ID = id
	}
	return o
}

// Pay adds cents to the order's balance, unless the sum would overflow
// (ErrOverflow). token is the fencing token of the lock the caller holds on
// the order.
func (s *Store) Pay(ctx context.Context, id string, token, cents int64) (Order, error) {
	if cents <= 0 {
		return Order{}, ErrBadAmount
	}
	return s.update(ctx, id, token, func(o *Order) error {
		if o.Balance > math.MaxInt64-cents {
			return fmt.Errorf("%w: %d + %d cents", ErrOverflow, o.Balance, cents)
		}
		o.Balance += cents
		o.Payments++
		return nil
	}, nil)
}

// Refund takes cents back from the balance.
func (s *Store) Refund(ctx context.Context, id string, token, cents int64) (Order, error) {
	if cents <= 0 {
		return Order{}, ErrBadAmount
	}
	return s.update(ctx, id, token, func(o *Order) error {
		if o.Balance < cents {
			return fmt.Errorf("%w: balance %d < %d", ErrNotPaid, o.Balance, cents)
		}
		o.Balance -= cents
		o.Refunds++
		return nil
	}, nil)
}

// Ship marks a paid order shipped, once.
func (s *Store) Ship(ctx context.Context, id string, token int64) (Order, error) {
	return s.update(ctx, id, token, func(o *Order) error {
		switch {
		case o.Shipped:
			return ErrAlreadyShipped
		case o.Balance <= 0:
			return ErrNotPaid
		}
		o.Shipped = true
		return nil
	}, nil)
}

// Import adds lines to order id in the order lines yields them, each
// line one read-modify-write (so each takes Work, and each is fenced with
// token). It stops at the first error, of lines (the caller's: a broken
// upload) or of a line's write (ErrBadLine, ErrOverflow, ErrStaleToken,
// ctx ended), and returns the order after the last line it added and how
// many it added: lines added before an error stay, as rows written before
// a failed upload would.
func (s *Store) Import(ctx context.Context, id string, token int64, lines iter.Seq2[Line, error]) (Order, int, error) {
	o, n := s.Get(id), 0
	for l, err := range lines {
		if err != nil {
			return o, n, err
		}
		next, err := s.addLine(ctx, id, token, l)
		if err != nil {
			return o, n, err
		}
		o, n = next, n+1
	}
	return o, n, nil
}

// addLine appends one line and adds its value to the order's total.
func (s *Store) addLine(ctx context.Context, id string, token int64, l Line) (Order, error) {
	cents, err := l.cents()
	if err != nil {
		return Order{}, err
	}
	return s.update(ctx, id, token, func(o *Order) error {
		if o.Total > math.MaxInt64-cents {
			return fmt.Errorf("%w: total %d + %d cents", ErrOverflow, o.Total, cents)
		}
		o.Total += cents
		o.Lines++
		return nil
	}, func() { s.lines[id] = append(s.lines[id], l) })
}

// PageSize is how many lines ExportLines reads at a time.
const PageSize = 16

// ExportLines calls send with each line of order id, in order, reading
// them a page of PageSize at a time (Work each, as a cursor over a slow
// database would), and returns how many it sent. It stops at the first
// error of send or of a read (ctx ended). Run while others import, it
// reads whatever lines are there when it gets to them: only the order's
// lock makes it one state of the order.
func (s *Store) ExportLines(ctx context.Context, id string, send func(Line) error) (int, error) {
	n := 0
	for {
		if err := s.work(ctx); err != nil {
			return n, err
		}
		s.mu.Lock()
		ls := s.lines[id]
		page := slices.Clone(ls[min(n, len(ls)):min(n+PageSize, len(ls))])
		s.mu.Unlock()
		for _, l := range page {
			if err := send(l); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < PageSize {
			return n, nil
		}
	}
}

// update is the read-modify-write every operation does: read, work (ended
// early when ctx ends: the client left or the lock was lost), then write
// if the token is not older than the order's last. also, when not nil,
// writes the rest of the change (rows beside the order's) with the order.
func (s *Store) update(ctx context.Context, id string, token int64, change func(*Order) error, also func()) (Order, error) {
	o := s.Get(id)
	if err := s.work(ctx); err != nil {
		return Order{}, err
	}
	if err := change(&o); err != nil {
		return Order{}, err
	}
	o.Token = token
	if err := s.record(ctx, o); err != nil {
		return Order{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.orders[id].Token {
		return Order{}, ErrStaleToken
	}
	s.orders[id] = o
	if also != nil {
		also()
	}
	return o, nil
}

// record writes order o's record through the fenced store, if any: the
// resource refuses the older token, in one call.
func (s *Store) record(ctx context.Context, o Order) error {
	if s.fence == nil {
		return nil
	}
	rec, err := json.Marshal(o)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.written[o.ID] = true
	s.mu.Unlock()
	var opts []fence.SetOption
	if s.records.TTL > 0 {
		opts = append(opts, fence.TTL(s.records.TTL))
	}
	if err := s.fence.Set(ctx, s.records.Prefix+o.ID, string(rec), o.Token, opts...); errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("%w: %w", ErrStaleToken, err)
	} else if err != nil {
		return err
	}
	return nil
}

// Export runs a tenant's export: it takes exportWork × Work and counts the tenant's
// exports. Exports of one tenant may run at once (the examples limit how
// many with a semaphore); token is the permit's, which orders the exports'
// starts, not their ends, so no token is refused here.
func (s *Store) Export(ctx context.Context, tenant string, token int64) (Export, error) {
	if err := s.workFor(ctx, exportWork*s.Work); err != nil {
		return Export{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Export{Tenant: tenant, Number: s.exports[tenant].Number + 1, Token: token}
	s.exports[tenant] = e
	return e, nil
}

// Transfer moves cents of balance from order from to order to (ErrNotPaid
// when from's balance is short): one read of both, Work, and a write of
// each, fenced with the token of that order's lock. The caller holds both
// orders' locks (the examples take them together, all or nothing).
func (s *Store) Transfer(ctx context.Context, from, to string, fromToken, toToken, cents int64) (Order, Order, error) {
	if cents <= 0 {
		return Order{}, Order{}, ErrBadAmount
	}
	if from == to {
		return Order{}, Order{}, fmt.Errorf("%w: a transfer needs two orders", ErrBadAmount)
	}
	a, b := s.Get(from), s.Get(to)
	if err := s.work(ctx); err != nil {
		return Order{}, Order{}, err
	}
	switch {
	case a.Balance < cents:
		return Order{}, Order{}, fmt.Errorf("%w: balance %d < %d", ErrNotPaid, a.Balance, cents)
	case b.Balance > math.MaxInt64-cents:
		return Order{}, Order{}, fmt.Errorf("%w: %d + %d cents", ErrOverflow, b.Balance, cents)
	}
	a.Balance, a.Transfers = a.Balance-cents, a.Transfers+1
	b.Balance, b.Transfers = b.Balance+cents, b.Transfers+1
	a.Token, b.Token = fromToken, toToken
	if err := s.record(ctx, a); err != nil {
		return Order{}, Order{}, err
	}
	if err := s.record(ctx, b); err != nil {
		return Order{}, Order{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromToken < s.orders[from].Token || toToken < s.orders[to].Token {
		return Order{}, Order{}, ErrStaleToken
	}
	s.orders[from], s.orders[to] = a, b
	return a, b, nil
}

// Settings reads a tenant's settings (Work: a slow read; many may run at
// once under the read side of the tenant's read/write lock).
func (s *Store) Settings(ctx context.Context, tenant string) (Settings, error) {
	if err := s.workFor(ctx, readWork*s.Work); err != nil {
		return Settings{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.settings[tenant]
	st.Tenant = tenant
	return st, nil
}

// SetSettings writes a tenant's plan: read, Work, write, refused for a
// token older than the last write's (the write side excludes everyone).
func (s *Store) SetSettings(ctx context.Context, tenant, plan string, token int64) (Settings, error) {
	s.mu.Lock()
	st := s.settings[tenant]
	s.mu.Unlock()
	if err := s.work(ctx); err != nil {
		return Settings{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.settings[tenant].Token {
		return Settings{}, ErrStaleToken
	}
	st = Settings{Tenant: tenant, Plan: plan, Version: st.Version + 1, Token: token}
	s.settings[tenant] = st
	return st, nil
}

// An export is a long read of the tenant's data, and a settings read a
// slow one: Work times these (so exports of one tenant, and reads of its
// settings, meet).
const (
	exportWork = 10
	readWork   = 5
)

func (s *Store) work(ctx context.Context) error { return s.workFor(ctx, s.Work) }

func (s *Store) workFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// HTTPStatus maps an operation's error to the status the examples answer.
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrBadAmount), errors.Is(err, ErrOverflow), errors.Is(err, ErrBadLine):
		return http.StatusBadRequest
	case errors.Is(err, ErrStaleToken), errors.Is(err, ErrNotPaid), errors.Is(err, ErrAlreadyShipped):
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusServiceUnavailable // the lock was lost (core.ErrLost) or similar: try again
}

// DefaultAmount is the amount of a payment or refund without ?amount=.
const DefaultAmount = 100

// ParseAmount reads the ?amount= of a request: cents, DefaultAmount when "".
func ParseAmount(s string) (int64, error) {
	if s == "" {
		return DefaultAmount, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q", ErrBadAmount, s)
	}
	return n, nil
}
