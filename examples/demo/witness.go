package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/lockkit/lockkit/examples/internal/orders"
)

// witness watches the order book from inside the handlers' critical
// sections, independently of the lock: each replica's routes run on its
// own view of the one shared store (book), which counts per order the
// writers inside at once (more than one is an overlap: two holders of
// order:<id>), records every accepted write with its fencing token and its
// replica, and tallies what the store said it did. After the run, check
// compares that tally with the store's final state.
type witness struct {
	store *orders.Store

	mu     sync.Mutex
	orders map[string]*trail
}

// trail is what the witness saw of one order.
type trail struct {
	inside   int // writers in the critical section now
	sections int // critical sections entered
	overlaps int // entries while another writer was inside

	writes []write // accepted writes, in the order they were made

	payments, refunds, ships int
	paid, refunded           int64 // cents the store said it added / took back
	staleRefused             int   // writes the store refused for an old token
}

// write is one accepted write.
type write struct {
	token   int64
	replica string
}

func newWitness(store *orders.Store) *witness {
	return &witness{store: store, orders: map[string]*trail{}}
}

// book is the order book as replica's routes see it.
func (w *witness) book(replica string) orders.Book { return &watchedBook{w: w, replica: replica} }

type watchedBook struct {
	w       *witness
	replica string
}

func (b *watchedBook) Get(id string) orders.Order { return b.w.store.Get(id) }

func (b *watchedBook) Pay(ctx context.Context, id string, token, cents int64) (orders.Order, error) {
	return b.w.watch(b.replica, id, token, func() (orders.Order, error) { return b.w.store.Pay(ctx, id, token, cents) },
		func(t *trail) { t.payments++; t.paid += cents })
}

func (b *watchedBook) Refund(ctx context.Context, id string, token, cents int64) (orders.Order, error) {
	return b.w.watch(b.replica, id, token, func() (orders.Order, error) { return b.w.store.Refund(ctx, id, token, cents) },
		func(t *trail) { t.refunds++; t.refunded += cents })
}

func (b *watchedBook) Ship(ctx context.Context, id string, token int64) (orders.Order, error) {
	return b.w.watch(b.replica, id, token, func() (orders.Order, error) { return b.w.store.Ship(ctx, id, token) },
		func(t *trail) { t.ships++ })
}

// Export is not watched: the demo's clients change orders only, and the
// witness checks orders. (The replicas serve /tenant/export all the same.)
func (b *watchedBook) Export(ctx context.Context, tenant string, token int64) (orders.Export, error) {
	return b.w.store.Export(ctx, tenant, token)
}

// Import and ExportLines are not watched: the demo's clients do not stream.
func (b *watchedBook) Import(ctx context.Context, id string, token int64, lines iter.Seq2[orders.Line, error]) (orders.Order, int, error) {
	return b.w.store.Import(ctx, id, token, lines)
}

func (b *watchedBook) ExportLines(ctx context.Context, id string, send func(orders.Line) error) (int, error) {
	return b.w.store.ExportLines(ctx, id, send)
}

// watch runs one write of order id inside the witness: entering counts an
// overlap if another writer is inside; an accepted write is recorded (with
// its token, in order) before leaving.
func (w *witness) watch(replica, id string, token int64, op func() (orders.Order, error), accepted func(*trail)) (orders.Order, error) {
	w.mu.Lock()
	t := w.orders[id]
	if t == nil {
		t = &trail{}
		w.orders[id] = t
	}
	t.inside++
	t.sections++
	if t.inside > 1 {
		t.overlaps++
	}
	w.mu.Unlock()

	o, err := op()

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		t.writes = append(t.writes, write{token: token, replica: replica})
		accepted(t)
	case errors.Is(err, orders.ErrStaleToken):
		t.staleRefused++
	}
	t.inside--
	return o, err
}

// check is one line of the witness's verdict.
type check struct {
	ok     bool
	what   string // what holds when ok
	detail string // the numbers, or the first counter-example
}

// verdict is the witness's report.
type verdict struct {
	checks  []check
	orders  int // orders written to
	writes  int // accepted writes
	entered int // critical sections entered
	stale   int // writes the store refused for an old token
	// hottest is the order whose fencing tokens the report shows, trail its
	// accepted writes: the most written order (the scenario picks the most
	// contended one instead when the Observer saw contention).
	hottest string
	trail   []write
}

func (v verdict) holds() bool {
	for _, c := range v.checks {
		if !c.ok {
			return false
		}
	}
	return len(v.checks) > 0
}

// check compares what the witness saw with the store. replicas are the
// replicas that should all have written.
func (w *witness) check(replicas []string) verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	var v verdict
	ids := make([]string, 0, len(w.orders))
	for id := range w.orders {
		ids = append(ids, id)
	}
	// The busiest orders first, so a counter-example names a hot one.
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(w.orders[b].writes), len(w.orders[a].writes)), cmp.Compare(a, b))
	})

	var lost, overlapped, stale, doubleShip []string
	var overlaps, payments, refunds, shipped int
	wrote := map[string]int{}
	for _, id := range ids {
		t := w.orders[id]
		o := w.store.Get(id)
		v.entered += t.sections
		v.stale += t.staleRefused
		payments, refunds, shipped = payments+t.payments, refunds+t.refunds, shipped+t.ships
		if len(t.writes) > 0 {
			v.orders++
			v.writes += len(t.writes)
		}
		if v.hottest == "" {
			v.hottest, v.trail = id, slices.Clone(t.writes)
		}
		for _, wr := range t.writes {
			wrote[wr.replica]++
		}
		if o.Balance != t.paid-t.refunded || o.Payments != t.payments || o.Refunds != t.refunds {
			lost = append(lost, fmt.Sprintf("order %s: balance %d, not %d, after the %d payments and %d refunds the store accepted (it counts %d and %d)",
				id, o.Balance, t.paid-t.refunded, t.payments, t.refunds, o.Payments, o.Refunds))
		}
		if t.overlaps > 0 {
			overlaps += t.overlaps
			overlapped = append(overlapped, fmt.Sprintf("order %s: %d overlaps (a writer entered while another was inside)", id, t.overlaps))
		}
		if bad := tokenOrder(id, t.writes, o.Token); bad != "" {
			stale = append(stale, bad)
		}
		if t.ships > 1 {
			doubleShip = append(doubleShip, fmt.Sprintf("order %s: shipped %d times", id, t.ships))
		}
	}

	v.checks = append(v.checks,
		verdictOf(lost, "no lost update, no double payment",
			fmt.Sprintf("%d orders: balance = sum of the %d payments - %d refunds the store accepted, on every one", v.orders, payments, refunds)),
		verdictOf(overlapped, "no overlapping holders",
			fmt.Sprintf("0 overlaps in %d critical sections", v.entered)),
		verdictOf(stale, "no stale-token write accepted",
			fmt.Sprintf("tokens strictly increasing on every order over %d writes; %d stale writes refused", v.writes, v.stale)),
		verdictOf(doubleShip, "shipped at most once",
			fmt.Sprintf("%d orders shipped, none twice", shipped)),
	)
	var idle []string
	for _, r := range replicas {
		if wrote[r] == 0 {
			idle = append(idle, r+" wrote nothing")
		}
	}
	v.checks = append(v.checks, verdictOf(idle, "every replica wrote", "writes by "+byReplica(replicas, wrote)))
	if len(overlapped) > 0 { // say how many in all, not only the first
		v.checks[1].detail = fmt.Sprintf("%d overlaps on %d orders; %s", overlaps, len(overlapped), v.checks[1].detail)
	}
	return v
}

// verdictOf is ok when there is no counter-example, else the first one
// (and how many more).
func verdictOf(bad []string, what, good string) check {
	switch len(bad) {
	case 0:
		return check{ok: true, what: what, detail: good}
	case 1:
		return check{what: what, detail: bad[0]}
	}
	return check{what: what, detail: fmt.Sprintf("%s (and %d more orders)", bad[0], len(bad)-1)}
}

func byReplica(replicas []string, n map[string]int) string {
	parts := make([]string, len(replicas))
	for i, r := range replicas {
		parts[i] = fmt.Sprintf("%s %d", r, n[r])
	}
	return strings.Join(parts, ", ")
}

// trail is the accepted writes of order id, in order.
func (w *witness) trail(id string) []write {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.orders[id]; t != nil {
		return slices.Clone(t.writes)
	}
	return nil
}

// tokenOrder is "" when the tokens of an order's accepted writes strictly
// increase and the store kept the last one, else what is wrong.
func tokenOrder(id string, ws []write, stored int64) string {
	for i := 1; i < len(ws); i++ {
		if ws[i].token <= ws[i-1].token {
			return fmt.Sprintf("order %s: write %d carried token %d (%s) after %d (%s)",
				id, i+1, ws[i].token, ws[i].replica, ws[i-1].token, ws[i-1].replica)
		}
	}
	if n := len(ws); n > 0 && ws[n-1].token != stored {
		return fmt.Sprintf("order %s: the store's last token is %d, the last write carried %d", id, stored, ws[n-1].token)
	}
	return ""
}
