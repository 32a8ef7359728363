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
	"time"

	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
)

// witness watches the order book from inside the handlers' critical
// sections, independently of the lock: each replica's routes run on its
// own view of the one shared store (book), which counts per order the
// writers inside at once (more than one is an overlap: two holders of
// order:<id>), records every accepted write with its fencing token and its
// replica, and tallies what the store said it did. It also keeps every
// critical section's span on a clock of its own, imports and exports of
// line items included: a stream is one critical section however many
// messages it takes. After the run, check compares that tally with the
// store's final state, and the spans of each order with each other.
type witness struct {
	store *orders.Store

	mu     sync.Mutex
	clock  int64 // ticks at every entry and exit of a critical section
	orders map[string]*trail
	// tenants: what the witness saw of each tenant's exports (a semaphore
	// of exportLimit) and settings (a read/write lock).
	tenants map[string]*tenantTrail
	// applied are the runs that applied each payment, by its key (the
	// client's reference, orders.PaymentOf): the per-payment ledger.
	applied map[string][]write
}

// tenantTrail is what the witness saw of one tenant.
type tenantTrail struct {
	entered                  int // critical sections entered (exports, reads, writes)
	exporting, mostExporting int // exports inside now / at most at once
	exports                  int // exports the store ran
	tooMany                  int // entries that made more than exportLimit exports at once

	readers, writers int // settings readers and writers inside now
	mostReaders      int // readers inside at once, at most
	reads, writes    int // reads and writes the store ran
	conflicts        int // entries of a writer beside anyone, or a reader beside a writer
	version          int // writes the store accepted
}

// trail is what the witness saw of one order.
type trail struct {
	inside   int // pay, refund or ship writers in the critical section now
	sections int // critical sections entered (streams included)
	overlaps int // entries while another writer was inside

	writes []write // accepted writes, in the order they were made
	spans  []span  // every critical section, in the order they ended

	payments, refunds, ships int
	paid, refunded           int64 // cents the store said it added / took back
	transfers                int   // transfers the store accepted, in or out
	in, out                  int64 // cents transferred to / from the order
	lines                    int   // lines the store said it imported
	linesTotal               int64 // their value in cents
	imports, exports         int   // streams that ran (exports: to their end)
	staleRefused             int   // writes the store refused for an old token
}

// span is one critical section of an order on the witness's clock: from
// its entry to its exit. Every tick is distinct, so two spans overlap
// exactly when each began before the other ended.
type span struct {
	from, to int64
	what     string // "pay", "refund", "ship", "import", "export"
	replica  string
}

func (s span) stream() bool { return s.what == "import" || s.what == "export" }

func (s span) overlaps(x span) bool { return s.from < x.to && x.from < s.to }

// write is one accepted write.
type write struct {
	token   int64
	replica string
}

func newWitness(store *orders.Store) *witness {
	return &witness{store: store, orders: map[string]*trail{}, tenants: map[string]*tenantTrail{}, applied: map[string][]write{}}
}

// book is the order book as replica's routes see it.
func (w *witness) book(replica string) orders.Book { return &watchedBook{w: w, replica: replica} }

type watchedBook struct {
	w       *witness
	replica string
}

func (b *watchedBook) Get(id string) orders.Order { return b.w.store.Get(id) }

// Pay records, besides the order's write, the run that applied the
// payment under its reference (its idempotency key).
func (b *watchedBook) Pay(ctx context.Context, id string, token, cents int64) (orders.Order, error) {
	ref := orders.PaymentOf(ctx)
	return b.w.watch(b.replica, id, token, "pay", func() (orders.Order, error) { return b.w.store.Pay(ctx, id, token, cents) },
		func(t *trail) {
			t.payments++
			t.paid += cents
			if ref != "" {
				b.w.applied[ref] = append(b.w.applied[ref], write{token: token, replica: b.replica})
			}
		})
}

func (b *watchedBook) Refund(ctx context.Context, id string, token, cents int64) (orders.Order, error) {
	return b.w.watch(b.replica, id, token, "refund", func() (orders.Order, error) { return b.w.store.Refund(ctx, id, token, cents) },
		func(t *trail) { t.refunds++; t.refunded += cents })
}

func (b *watchedBook) Ship(ctx context.Context, id string, token int64) (orders.Order, error) {
	return b.w.watch(b.replica, id, token, "ship", func() (orders.Order, error) { return b.w.store.Ship(ctx, id, token) },
		func(t *trail) { t.ships++ })
}

// Export counts the tenant's exports inside at once: never more than
// exportLimit (the routes' semaphore), and more than one at a time shows
// the limit admitting several.
func (b *watchedBook) Export(ctx context.Context, tenant string, token int64) (orders.Export, error) {
	w := b.w
	w.mu.Lock()
	t := w.tenantOf(tenant)
	t.entered++
	t.exporting++
	t.mostExporting = max(t.mostExporting, t.exporting)
	if t.exporting > exportLimit {
		t.tooMany++
	}
	w.mu.Unlock()
	e, err := w.store.Export(ctx, tenant, token)
	w.mu.Lock()
	t.exporting--
	if err == nil {
		t.exports++
	}
	w.mu.Unlock()
	return e, err
}

// Settings and SetSettings are the read and write sides of the tenant's
// read/write lock: a writer beside anyone, or a reader beside a writer, is
// a conflict; readers side by side are the lock working.
func (b *watchedBook) Settings(ctx context.Context, tenant string) (orders.Settings, error) {
	w := b.w
	w.mu.Lock()
	t := w.tenantOf(tenant)
	t.entered++
	t.readers++
	t.mostReaders = max(t.mostReaders, t.readers)
	if t.writers > 0 {
		t.conflicts++
	}
	w.mu.Unlock()
	st, err := w.store.Settings(ctx, tenant)
	w.mu.Lock()
	t.readers--
	if err == nil {
		t.reads++
	}
	w.mu.Unlock()
	return st, err
}

func (b *watchedBook) SetSettings(ctx context.Context, tenant, plan string, token int64) (orders.Settings, error) {
	w := b.w
	w.mu.Lock()
	t := w.tenantOf(tenant)
	t.entered++
	t.writers++
	if t.writers > 1 || t.readers > 0 {
		t.conflicts++
	}
	w.mu.Unlock()
	st, err := w.store.SetSettings(ctx, tenant, plan, token)
	w.mu.Lock()
	t.writers--
	if err == nil {
		t.writes++
		t.version++
	}
	w.mu.Unlock()
	return st, err
}

// Transfer is one critical section of both orders at once: entering
// counts an overlap on each order where another writer is inside, and an
// accepted transfer is a write of each order with that order's token.
func (b *watchedBook) Transfer(ctx context.Context, from, to string, fromToken, toToken, cents int64) (orders.Order, orders.Order, error) {
	w := b.w
	w.mu.Lock()
	tf, tt := w.trailOf(from), w.trailOf(to)
	w.clock++
	start := w.clock
	for _, t := range []*trail{tf, tt} {
		t.inside++
		t.sections++
		if t.inside > 1 {
			t.overlaps++
		}
	}
	w.mu.Unlock()

	a, c, err := w.store.Transfer(ctx, from, to, fromToken, toToken, cents)

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		tf.writes = append(tf.writes, write{token: fromToken, replica: b.replica})
		tt.writes = append(tt.writes, write{token: toToken, replica: b.replica})
		tf.transfers, tt.transfers = tf.transfers+1, tt.transfers+1
		tf.out += cents
		tt.in += cents
	case errors.Is(err, orders.ErrStaleToken):
		tf.staleRefused++
	}
	w.clock++
	for _, t := range []*trail{tf, tt} {
		t.inside--
		t.spans = append(t.spans, span{from: start, to: w.clock, what: "transfer", replica: b.replica})
	}
	return a, c, err
}

// tenantOf is tenant's trail, made on first use. w.mu is held.
func (w *witness) tenantOf(tenant string) *tenantTrail {
	t := w.tenants[tenant]
	if t == nil {
		t = &tenantTrail{}
		w.tenants[tenant] = t
	}
	return t
}

// Import is one critical section from its first line to its last: the
// lines it added are tallied (and checked against the store's count), and
// an import that added any is one write in the order's token trail, made
// when its first line was, with the token every line carried.
func (b *watchedBook) Import(ctx context.Context, id string, token int64, lines iter.Seq2[orders.Line, error]) (orders.Order, int, error) {
	var (
		o    orders.Order
		n    int
		seen []orders.Line // what the store was handed, in order: it added the first n
	)
	err := b.w.stream(b.replica, id, "import", func() error {
		var err error
		o, n, err = b.w.store.Import(ctx, id, token, func(yield func(orders.Line, error) bool) {
			first := true
			for l, err := range lines {
				if err == nil {
					seen = append(seen, l)
				}
				if !yield(l, err) {
					return
				}
				if first { // the store added the line: the import's write is made
					first = false
					b.w.mu.Lock()
					t := b.w.trailOf(id)
					t.writes = append(t.writes, write{token: token, replica: b.replica})
					b.w.mu.Unlock()
				}
			}
		})
		return err
	}, func(t *trail, err error) {
		t.imports++
		for _, l := range seen[:n] {
			t.lines++
			t.linesTotal += l.Quantity * l.UnitCents
		}
		if errors.Is(err, orders.ErrStaleToken) {
			t.staleRefused++
		}
	})
	return o, n, err
}

// ExportLines is one critical section from its first read to its last.
func (b *watchedBook) ExportLines(ctx context.Context, id string, send func(orders.Line) error) (int, error) {
	var n int
	err := b.w.stream(b.replica, id, "export", func() error {
		var err error
		n, err = b.w.store.ExportLines(ctx, id, send)
		return err
	}, func(t *trail, err error) {
		if err == nil {
			t.exports++
		}
	})
	return n, err
}

// trailOf is order id's trail, made on first use. w.mu is held.
func (w *witness) trailOf(id string) *trail {
	t := w.orders[id]
	if t == nil {
		t = &trail{}
		w.orders[id] = t
	}
	return t
}

// watch runs one write of order id inside the witness: entering counts an
// overlap if another writer is inside; an accepted write is recorded (with
// its token, in order) before leaving, and every write's span.
func (w *witness) watch(replica, id string, token int64, what string, op func() (orders.Order, error), accepted func(*trail)) (orders.Order, error) {
	w.mu.Lock()
	t := w.trailOf(id)
	w.clock++
	from := w.clock
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
	w.clock++
	t.spans = append(t.spans, span{from: from, to: w.clock, what: what, replica: replica})
	return o, err
}

// stream runs one import or export of order id inside the witness, as one
// span; ended tallies it, with run's error, before leaving.
func (w *witness) stream(replica, id, what string, run func() error, ended func(*trail, error)) error {
	w.mu.Lock()
	t := w.trailOf(id)
	w.clock++
	from := w.clock
	t.sections++
	w.mu.Unlock()

	err := run()

	w.mu.Lock()
	defer w.mu.Unlock()
	ended(t, err)
	w.clock++
	t.spans = append(t.spans, span{from: from, to: w.clock, what: what, replica: replica})
	return err
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
	entered int // critical sections entered (streams included)
	stale   int // writes the store refused for an old token
	fenced  int // orders whose record in the fenced store has the book's last token
	// imports and exports are the streams that ran (exports: to their
	// end), lines the lines the imports added.
	imports, exports, lines int
	// transfers are the transfers the store accepted (each two writes, of
	// two orders, under two leases); tenantEntered the tenant routes'
	// critical sections, tenantOK those the store completed.
	transfers, tenantEntered, tenantOK int
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

	var lost, overlapped, stale, doubleShip, inStream []string
	var overlaps, payments, refunds, shipped, transfers int
	wrote := map[string]int{}
	for _, id := range ids {
		t := w.orders[id]
		o := w.store.Get(id)
		v.entered += t.sections
		v.stale += t.staleRefused
		v.imports, v.exports, v.lines = v.imports+t.imports, v.exports+t.exports, v.lines+t.lines
		payments, refunds, shipped = payments+t.payments, refunds+t.refunds, shipped+t.ships
		transfers += t.transfers
		v.transfers += t.transfers
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
		switch {
		case o.Balance != t.paid-t.refunded+t.in-t.out || o.Payments != t.payments || o.Refunds != t.refunds || o.Transfers != t.transfers:
			lost = append(lost, fmt.Sprintf("order %s: balance %d, not %d, after the %d payments, %d refunds and %d transfers the store accepted (it counts %d, %d and %d)",
				id, o.Balance, t.paid-t.refunded+t.in-t.out, t.payments, t.refunds, t.transfers, o.Payments, o.Refunds, o.Transfers))
		case o.Lines != t.lines || o.Total != t.linesTotal:
			lost = append(lost, fmt.Sprintf("order %s: %d lines worth %d cents, not the %d worth %d the store imported",
				id, o.Lines, o.Total, t.lines, t.linesTotal))
		}
		if t.overlaps > 0 {
			overlaps += t.overlaps
			overlapped = append(overlapped, fmt.Sprintf("order %s: %d overlaps (a writer entered while another was inside)", id, t.overlaps))
		}
		if bad := tokenOrder(id, t.writes, o.Token); bad != "" {
			stale = append(stale, bad)
		}
		if bad := w.fencedView(id, len(t.writes) > 0, o.Token); bad != "" {
			stale = append(stale, bad)
		} else if len(t.writes) > 0 && w.fencedOn() {
			v.fenced++
		}
		if t.ships > 1 {
			doubleShip = append(doubleShip, fmt.Sprintf("order %s: shipped %d times", id, t.ships))
		}
		if bad := streamOverlap(id, t.spans); bad != "" {
			inStream = append(inStream, bad)
		}
	}

	v.checks = append(v.checks,
		verdictOf(lost, "no lost update, no double payment",
			fmt.Sprintf("%d orders: balance = sum of the %d payments - %d refunds ± %d transfers, lines = the %d lines imported, as the store accepted them, on every one", v.orders, payments, refunds, transfers/2, v.lines)),
		verdictOf(overlapped, "no overlapping holders",
			fmt.Sprintf("0 overlaps in %d critical sections", v.entered)),
		verdictOf(stale, "no stale-token write accepted",
			fmt.Sprintf("tokens strictly increasing on every order over %d writes; %d stale writes refused%s", v.writes, v.stale, fencedNote(v))),
		verdictOf(doubleShip, "shipped at most once",
			fmt.Sprintf("%d orders shipped, none twice", shipped)),
		verdictOf(inStream, checkStreams,
			fmt.Sprintf("%d imports (%d lines) and %d exports, each alone with its order from its first line to its last", v.imports, v.lines, v.exports)),
	)
	v.transfers /= 2 // counted on both orders
	v.checks = append(v.checks, w.tenantChecks(&v)...)
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

// checkStreams is the what of the check that an import or export of an
// order is the only critical section of that order while it runs.
const checkStreams = "nothing inside an import or export of its order"

// streamOverlap is "" when no span of order id overlaps one of its
// imports or exports, else the first such pair: a pay, refund or ship
// that ran inside an import saw (or changed) the order half imported, one
// inside an export changed what the export was reading, and two streams
// of one order at once are two holders of order:<id>.
func streamOverlap(id string, spans []span) string {
	for i, s := range spans {
		if !s.stream() {
			continue
		}
		for j, x := range spans {
			if j != i && s.overlaps(x) {
				return fmt.Sprintf("order %s: %s on %s [%d, %d] overlapped %s on %s [%d, %d]",
					id, x.what, x.replica, x.from, x.to, s.what, s.replica, s.from, s.to)
			}
		}
	}
	return ""
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
	return check{what: what, detail: fmt.Sprintf("%s (and %d more)", bad[0], len(bad)-1)}
}

func byReplica(replicas []string, n map[string]int) string {
	parts := make([]string, len(replicas))
	for i, r := range replicas {
		parts[i] = fmt.Sprintf("%s %d", r, n[r])
	}
	return strings.Join(parts, ", ")
}

// payments checks the client's ledger against the runs the witness saw
// apply each payment (paymentCheck).
func (w *witness) payments(l *ledger) (check, paymentNumbers) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return paymentCheck(l, w.applied)
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

// fencedOn: the book writes through a fenced store (package fence).
func (w *witness) fencedOn() bool { return w.store.IsFenced() }

// fencedView checks the resource's own view of order id: the token its
// record in the fenced store was last written with is the book's last
// one ("" when it is, or when the book is not fenced).
func (w *witness) fencedView(id string, written bool, last int64) string {
	if !w.store.IsFenced() {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tok, ok, err := w.store.FencedToken(ctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("order %s: reading its fenced record: %v", id, err)
	case written && (!ok || tok != last):
		return fmt.Sprintf("order %s: the fenced store holds token %d (found %v), the book's last write %d", id, tok, ok, last)
	}
	return ""
}

func fencedNote(v verdict) string {
	if v.fenced == 0 {
		return ""
	}
	return fmt.Sprintf(" (by the fenced store, package fence); its record of each of the %d orders carries the last write's token", v.fenced)
}

// exportLimit is how many exports of one tenant the routes admit at once
// (their semaphore); the witness checks it was never exceeded.
const exportLimit = ordershttp.ExportLimit

// tenantChecks are the checks of the tenants' exports (a semaphore) and
// settings (a read/write lock); none when no tenant was asked for. w.mu is
// held.
func (w *witness) tenantChecks(v *verdict) []check {
	if len(w.tenants) == 0 {
		return nil
	}
	var crowded, conflicting []string
	var exports, most, reads, writes, mostReaders int
	ids := make([]string, 0, len(w.tenants))
	for id := range w.tenants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := w.tenants[id]
		exports, reads, writes = exports+t.exports, reads+t.reads, writes+t.writes
		v.tenantEntered += t.entered
		v.tenantOK += t.exports + t.reads + t.writes
		most, mostReaders = max(most, t.mostExporting), max(mostReaders, t.mostReaders)
		if t.tooMany > 0 {
			crowded = append(crowded, fmt.Sprintf("tenant %s: %d exports at once, the limit is %d", id, t.mostExporting, exportLimit))
		}
		if t.conflicts > 0 {
			conflicting = append(conflicting, fmt.Sprintf("tenant %s: %d settings accesses beside a writer", id, t.conflicts))
		}
		if st, _ := w.store.Settings(context.Background(), id); st.Version != t.version {
			conflicting = append(conflicting, fmt.Sprintf("tenant %s: settings version %d after %d accepted writes", id, st.Version, t.version))
		}
	}
	return []check{
		verdictOf(crowded, fmt.Sprintf("at most %d exports per tenant at once", exportLimit),
			fmt.Sprintf("%d exports of %d tenants, at most %d of one tenant at once", exports, len(ids), most)),
		verdictOf(conflicting, "no settings writer beside anyone",
			fmt.Sprintf("%d reads (up to %d of one tenant at once) and %d writes, no writer beside a reader or a writer", reads, mostReaders, writes)),
	}
}
