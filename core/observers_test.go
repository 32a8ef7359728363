package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// tagObserver logs each event it gets, and puts its tag in the contexts
// AcquireStart and AcquireEnd return, so the log shows which values each
// event's context carried.
type tagObserver struct {
	core.NopObserver
	tag  string
	meta string
	log  *eventLog
}

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

type startTag string
type endTag string

// seen lists the tags ctx carries, in the order a, b.
func seen(ctx context.Context) string {
	s := ""
	for _, t := range []string{"a", "b"} {
		if ctx.Value(startTag(t)) != nil {
			s += "s" + t
		}
		if ctx.Value(endTag(t)) != nil {
			s += "e" + t
		}
	}
	return s
}

func (o *tagObserver) AcquireStart(ctx context.Context, _ core.AcquireInfo) context.Context {
	o.log.add("%s.start[%s]", o.tag, seen(ctx))
	return context.WithValue(ctx, startTag(o.tag), true)
}
func (o *tagObserver) HolderMetadata(ctx context.Context, _ core.AcquireInfo) string {
	o.log.add("%s.meta[%s]", o.tag, seen(ctx))
	return o.meta
}
func (o *tagObserver) Contended(ctx context.Context, _ core.AcquireInfo, h core.Holder, _ int) {
	o.log.add("%s.contended[%s] %s", o.tag, seen(ctx), h.Metadata)
}
func (o *tagObserver) AcquireEnd(ctx context.Context, _ core.AcquireInfo, r core.AcquireResult) context.Context {
	o.log.add("%s.end[%s] %v", o.tag, seen(ctx), r.Outcome)
	if r.Outcome != core.OutcomeAcquired {
		return ctx
	}
	return context.WithValue(ctx, endTag(o.tag), true)
}
func (o *tagObserver) Released(ctx context.Context, _ core.LeaseInfo, _ error) {
	o.log.add("%s.released[%s]", o.tag, seen(ctx))
}

// TestObserversOrderAndContexts drives a real Client: each event reaches
// the Observers in order, each AcquireStart/AcquireEnd sees the context
// the one before returned, later events see everybody's values, and the
// holder metadata is the first non-empty one (what a contender reads).
func TestObserversOrderAndContexts(t *testing.T) {
	srv := redistest.Start(t)
	log := &eventLog{}
	a := &tagObserver{tag: "a", log: log}
	b := &tagObserver{tag: "b", meta: "from-b", log: log}
	c := newClient(t, srv, core.WithObserver(core.Observers(a, nil, b)), core.WithOwner("holder"))
	ctx := testkit.Context(t, 10*time.Second)
	l, err := c.Acquire(ctx, "observers:k")
	if err != nil {
		t.Fatal(err)
	}
	// A contender in another Client with the same pair meets b's metadata.
	other := newClient(t, srv, core.WithObserver(core.Observers(&tagObserver{tag: "a", log: log}, &tagObserver{tag: "b", log: log})))
	if _, err := other.TryAcquire(ctx, "observers:k"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("contender: %v, want ErrNotAcquired", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a.start[]", "b.start[sa]",
		"a.meta[sasb]", "b.meta[sasb]",
		"a.end[sasb] acquired", "b.end[saeasb] acquired",
		// the contender
		"a.start[]", "b.start[sa]", "a.meta[sasb]", "b.meta[sasb]",
		"a.contended[sasb] from-b", "b.contended[sasb] from-b",
		"a.end[sasb] contended", "b.end[sasb] contended",
		// the lease's context carries everybody's values
		"a.released[saeasbeb]", "b.released[saeasbeb]",
	}
	if got := log.get(); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}

func TestObserversDegenerate(t *testing.T) {
	if _, ok := core.Observers().(core.NopObserver); !ok {
		t.Fatalf("Observers() = %T, want NopObserver", core.Observers())
	}
	if _, ok := core.Observers(nil, nil).(core.NopObserver); !ok {
		t.Fatal("Observers(nil, nil) is not NopObserver")
	}
	one := &tagObserver{tag: "a", log: &eventLog{}}
	if got := core.Observers(nil, one); got != core.Observer(one) {
		t.Fatalf("Observers(nil, x) = %v, want x itself", got)
	}
}
