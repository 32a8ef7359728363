package lockview_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// acquireEnd feeds the Observer one finished acquire of key that waited wait.
func acquireEnd(o core.Observer, key string, wait time.Duration) {
	a := core.AcquireInfo{Key: key, Name: "GET /flood/:id", Strategy: "notify", Start: time.Now().Add(-wait)}
	ctx := o.AcquireStart(context.Background(), a)
	o.AcquireEnd(ctx, a, core.AcquireResult{Outcome: core.OutcomeAcquired, Attempts: 1, Waited: wait, Token: 1})
}

// TestFloodOfKeysIsBounded: requests choose keys, so a flood of distinct
// ones (long ones too) must neither grow the table past its maximum nor
// the heap with the flood's length, and the keys that are really hot stay.
func TestFloodOfKeysIsBounded(t *testing.T) {
	const maxKeys = 64
	v, err := lockview.New(lockview.WithMaxKeys(maxKeys), lockview.WithSamples(32), lockview.WithKeys(lockview.KeyRaw), lockview.WithTopKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	o := v.Observer()
	hot := func() {
		for i := range 3 {
			acquireEnd(o, "really:hot:"+strconv.Itoa(i), 200*time.Millisecond)
		}
	}
	long := strings.Repeat("x", 4096)
	flood := func(from, n int) {
		for i := from; i < from+n; i++ {
			if i%128 == 0 { // rare next to the flood, but each far hotter
				hot()
			}
			key := "flood:" + strconv.Itoa(i)
			if i%10 == 0 {
				key = long + key // a 4 KiB key: tracked by its first 512 bytes
			}
			acquireEnd(o, key, time.Millisecond)
		}
	}
	flood(0, 20_000)
	base := heapInUse()
	flood(20_000, 200_000)
	grown := int64(heapInUse()) - int64(base)
	keys, index := lockview.Tracked(v)
	t.Logf("after 220k distinct keys: %d tracked, index %d, heap grew %d bytes over the last 200k", keys, index, grown)
	if keys > maxKeys || index > maxKeys {
		t.Fatalf("table holds %d keys (index %d), max %d", keys, index, maxKeys)
	}
	if grown > 1<<20 {
		t.Fatalf("heap grew %d bytes during a flood of 200k keys with a full table", grown)
	}
	s := v.Snapshot(testkit.Client(t, redistest.Start(t).NewClient()))
	for i := range 3 {
		key := "really:hot:" + strconv.Itoa(i)
		// A full ring: tracked through the last 32 × 128 flood keys, never
		// evicted, where a coldness-blind eviction would have dropped it.
		if h, ok := hotKey(s, key); !ok || h.Acquires != 32 {
			t.Errorf("%s lost in the flood: %+v", key, h)
		}
	}
	if len(s.HotKeys) < 3 || !strings.HasPrefix(s.HotKeys[0].Key, "really:hot:") {
		t.Errorf("hottest key is %+v, want a really:hot one", s.HotKeys[0])
	}
	for _, h := range s.HotKeys {
		if len(h.Key) > 512+len("…") {
			t.Errorf("a hot key of %d bytes is shown", len(h.Key))
		}
	}
}

// TestFloodThroughRequests: the same through a real Client, whose
// requests each take a distinct key, as a crawler of /orders/:id would.
func TestFloodThroughRequests(t *testing.T) {
	r := newRig(t, lockview.WithMaxKeys(16), lockview.WithTopKeys(16))
	ctx := testkit.Context(t, 60*time.Second)
	for i := range 300 {
		l, err := r.c.Acquire(ctx, fmt.Sprintf("crawl:%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if keys, index := lockview.Tracked(r.v); keys > 16 || index > 16 {
		t.Fatalf("table holds %d keys (index %d), max 16", keys, index)
	}
	if s := r.snapshot(t); len(s.HotKeys) > 16 {
		t.Fatalf("%d hot keys shown", len(s.HotKeys))
	}
}

// TestObserverAllocationFree: once a key is tracked, the events of the
// acquire path allocate nothing.
func TestObserverAllocationFree(t *testing.T) {
	v, err := lockview.New()
	if err != nil {
		t.Fatal(err)
	}
	o := v.Observer()
	a := core.AcquireInfo{Key: "order:42", Name: "PUT /orders/:id", Strategy: "notify", Start: time.Now()}
	res := core.AcquireResult{Outcome: core.OutcomeAcquired, Attempts: 2, Waited: 3 * time.Millisecond, Token: 7}
	h := core.Holder{Owner: "replica-2", Token: 6}
	ctx := context.Background()
	acquireEnd(o, a.Key, time.Millisecond) // warm: the key is tracked
	allocs := testing.AllocsPerRun(1000, func() {
		c := o.AcquireStart(ctx, a)
		_ = o.HolderMetadata(c, a)
		o.Contended(c, a, h, 1)
		o.AcquireEnd(c, a, res)
		o.Released(c, core.LeaseInfo{Key: a.Key, Token: 7}, nil)
		o.Renewed(c, core.LeaseInfo{Key: a.Key, Token: 7}, nil)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per acquire of a tracked key", allocs)
	}
}

func BenchmarkObserverAcquire(b *testing.B) {
	v, err := lockview.New()
	if err != nil {
		b.Fatal(err)
	}
	o := v.Observer()
	a := core.AcquireInfo{Key: "order:42", Name: "PUT /orders/:id", Strategy: "notify", Start: time.Now()}
	res := core.AcquireResult{Outcome: core.OutcomeAcquired, Attempts: 1, Waited: time.Millisecond, Token: 7}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := o.AcquireStart(ctx, a)
			o.AcquireEnd(c, a, res)
		}
	})
}
